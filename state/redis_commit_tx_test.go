package state

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/changerate/changerate/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// txStore returns a bucketed store on a fresh redis-server and the
// server's client.
func txStore(t *testing.T, c redis.UniversalClient) *Redis {
	t.Helper()
	r, err := NewRedisFromClient(c, RedisConfig{KeyFormat: KeyFormatBuckets, IdleTTL: 720 * time.Hour, ExpiryEvents: ExpiryEventsOff}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestCommitTxFencedBetweenCheckAndExec: a zombie's transaction commit
// whose check passed, and whose partition is then claimed by a newer
// epoch before its EXEC (the hook runs the claim at exactly that point),
// writes nothing and deletes nothing: the EXEC is discarded, the commit
// is checked again and reports ErrFenced, and the new owner's state and
// offset are what Redis holds.
func TestCommitTxFencedBetweenCheckAndExec(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	for i, tc := range []struct {
		name   string
		claim  func(r *Redis, p Partition) error
		writes []Write
	}{
		{"claim", func(r *Redis, p Partition) error { _, err := r.Claim(ctx, p, 2); return err }, []Write{{Object: "https://a.example/1", Value: []byte("zombie")}}},
		{"takeover", func(r *Redis, p Partition) error { _, err := r.Takeover(ctx, p, 2); return err }, []Write{{Object: "https://a.example/2"}}}, // a delete
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Partition{Topic: "observations", ID: int32(5 + i)}
			zombie, owner := txStore(t, srv.Client), txStore(t, srv.Client)
			from, err := zombie.Claim(ctx, p, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := zombie.Commit(ctx, p, 1, from, 3, []Write{{Object: "https://a.example/1", Value: []byte("v1")}, {Object: "https://a.example/2", Value: []byte("v2")}}); err != nil {
				t.Fatal(err)
			}
			calls := 0
			zombie.beforeExec = func() {
				calls++
				if calls == 1 {
					if err := tc.claim(owner, p); err != nil {
						t.Error(err)
					}
				}
			}
			err = zombie.Commit(ctx, p, 1, 3, 4, tc.writes)
			if !errors.Is(err, ErrFenced) {
				t.Fatalf("zombie commit after a claim between check and EXEC: %v, want ErrFenced", err)
			}
			if calls != 1 {
				t.Errorf("the check passed %d times, want once (the second check must see the new epoch)", calls)
			}
			got, err := owner.Get(ctx, p, []string{"https://a.example/1", "https://a.example/2"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(got[0]) != "v1" || string(got[1]) != "v2" {
				t.Errorf("stored values %q, %q after the fenced commit, want v1, v2", got[0], got[1])
			}
			next, err := srv.Client.HGet(ctx, owner.MetaKey(p), "next").Result()
			if err != nil || next != "3" {
				t.Errorf("stored next %q (%v) after the fenced commit, want 3", next, err)
			}
			// The new owner commits from the stored offset.
			if err := owner.Commit(ctx, p, 2, 3, 4, []Write{{Object: "https://a.example/1", Value: []byte("new")}}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCommitTxRetriedAfterBenignChange: an EXEC discarded because the
// meta hash was written without a change of owner (here a field no check
// reads) is checked again and commits once.
func TestCommitTxRetriedAfterBenignChange(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	p := Partition{Topic: "observations", ID: 6}
	r := txStore(t, srv.Client)
	from, err := r.Claim(ctx, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	r.beforeExec = func() {
		calls++
		if calls == 1 {
			if err := srv.Client.HSet(ctx, r.MetaKey(p), "x", "1").Err(); err != nil {
				t.Error(err)
			}
		}
	}
	if err := r.Commit(ctx, p, 1, from, 1, []Write{{Object: "https://b.example/1", Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("the check ran %d times, want 2 (one discarded EXEC)", calls)
	}
	got, err := r.Get(ctx, p, []string{"https://b.example/1"}, nil)
	if err != nil || string(got[0]) != "v" {
		t.Fatalf("stored %q (%v), want v", got, err)
	}
}

// TestCheckMeta: the transaction's check gives the commit script's codes
// (bcommit.lua) on the same meta hashes.
func TestCheckMeta(t *testing.T) {
	s := func(v ...any) []any { return v }
	for _, tc := range []struct {
		name             string
		st               []any
		owner            string
		code             int64
		stored, nextWant string
	}{
		{"ok", s("1", "5", nil, nil, nil, "1024"), "", codeOK, "1", "9"},
		{"ok owner", s("1", "5", "o", nil, nil, "1024"), "o", codeOK, "1", "9"},
		{"first commit", s("1", nil, nil, nil, nil, "1024"), "", codeMismatch, "1", "-1"},
		{"no epoch", s(nil, nil, nil, nil, nil, nil), "", codeFenced, "", ""},
		{"newer epoch", s("2", "5", nil, nil, nil, "1024"), "", codeFenced, "2", "5"},
		{"other owner", s("1", "5", "x", nil, nil, "1024"), "o", codeOwner, "x", ""},
		{"owner missing", s("1", "5", nil, nil, nil, "1024"), "o", codeFenced, "", ""},
		{"mismatch", s("1", "7", nil, nil, nil, "1024"), "", codeMismatch, "1", "7"},
		{"repeat", s("1", "9", nil, "5", "1", "1024"), "", codeRepeat, "1", "9"},
		{"repeat other epoch", s("1", "9", nil, "5", "0", "1024"), "", codeMismatch, "1", "9"},
		{"layout", s("1", "5", nil, nil, nil, "64"), "", codeLayout, "64", "5"},
		{"layout none", s("1", "5", nil, nil, nil, nil), "", codeLayout, "", "5"},
	} {
		code, stored, next := checkMeta(tc.st, "1", "5", "9", tc.owner, "1024")
		if code != tc.code || stored != tc.stored || next != tc.nextWant {
			t.Errorf("%s: checkMeta = %d, %q, %q, want %d, %q, %q", tc.name, code, stored, next, tc.code, tc.stored, tc.nextWant)
		}
	}
}
