package query

import (
	"context"

	"github.com/changerate/changerate/records"
)

// RebuiltChange is the change estimate /v1/objects builds for object from
// the stored states (load, estimates), and whether a site state (for an
// object without a host, its population's prior) was loaded with it.
func (s *Server) RebuiltChange(ctx context.Context, object string) (*records.Estimate, bool, error) {
	l, err := s.load(ctx, object)
	if err != nil {
		return nil, false, err
	}
	change, _ := s.estimates(l, object)
	return change, l.site != nil, nil
}
