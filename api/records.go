package api

import "embed"

// Records holds the JSON Schema (draft 2020-12) of every record the
// programs write, one file per record type under records/ (observation,
// estimate, access-report, alert, dead-letter; a late record is a dead
// letter), with their shared parts in defs.schema.json. Each schema's $id
// is https://changerate.dev/records/<file>; docs/records.md describes the
// fields in words.
//
//go:embed records/*.schema.json
var Records embed.FS
