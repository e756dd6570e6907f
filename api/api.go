// Package api holds the OpenAPI 3 description of the aggregator's query
// API (openapi.yaml), embedded so that the server can serve it at
// /v1/openapi.yaml and the tests can validate every response against it.
package api

import _ "embed"

// OpenAPI is openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
