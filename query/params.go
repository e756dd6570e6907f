package query

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/changerate/changerate/aggregate"
)

// params checks that q holds only the allowed parameters, each once.
func params(q url.Values, allowed ...string) error {
	for k, v := range q {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return badRequest("unknown parameter %q (allowed: %s)", k, strings.Join(allowed, ", "))
		}
		if len(v) > 1 {
			return badRequest("parameter %q given %d times", k, len(v))
		}
	}
	return nil
}

// object returns the object a request names: the url parameter
// canonicalised as ingest does, or the object parameter verbatim — the
// name exactly as ingest recorded it, for inputs whose objects are not
// URLs (a git log's paths, changes-tsv). Exactly one of the two.
func (s *Server) object(q url.Values) (string, error) {
	raw := strings.TrimSpace(q.Get("url"))
	if name := q.Get("object"); name != "" {
		if raw != "" {
			return "", badRequest("give url or object, not both")
		}
		return name, nil
	}
	if raw == "" {
		return "", badRequest("parameter url is required (or object, a name exactly as ingest recorded it)")
	}
	s.canonMu.Lock()
	obj, _, err := s.canon.Canonical([]byte(raw))
	s.canonMu.Unlock()
	if err != nil {
		return "", badRequest("url %q is not a URL ingest would accept: %v", raw, err)
	}
	if aggregate.Site(obj) == "" {
		// javascript:alert(1), mailto:…: canonical, but no object of a
		// log or crawl has no host.
		return "", badRequest("url %q names no host: objects are http:// or https:// URLs (or a crawler's dns:HOST lookups); a name that is not a URL (a git log's path) is given as object", raw)
	}
	return obj, nil
}

func (s *Server) limit(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return s.cfg.DefaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > s.cfg.MaxLimit {
		return 0, badRequest("limit must be an integer in [1, %d], got %q", s.cfg.MaxLimit, v)
	}
	return n, nil
}
