package redisquota

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestWarmLoadsScripts checks that after Warm Redis holds every script,
// so that a first Reserve is one command, where a Store not warmed sends
// two (EVALSHA, answered NOSCRIPT, then EVAL).
func TestWarmLoadsScripts(t *testing.T) {
	for _, warm := range []bool{false, true} {
		m := newMini(t)
		s := m.store(t, Config{})
		if warm {
			if err := s.Warm(t.Context()); err != nil {
				t.Fatal(err)
			}
			for i, sc := range scripts {
				if ok, err := m.client.ScriptExists(t.Context(), sc.Hash()).Result(); err != nil || !ok[0] {
					t.Errorf("after Warm, script %d: exists %v, %v; want it loaded", i, ok, err)
				}
			}
		}
		before := s.Stats().Calls
		reserve(t, s, every100ms)
		want := uint64(2)
		if warm {
			want = 1
		}
		if got := s.Stats().Calls - before; got != want {
			t.Errorf("warmed %v: the first Reserve sent %d commands, want %d", warm, got, want)
		}
	}
}

// TestWarmSilentRedis checks that Warm on a Redis that never answers ends
// with the caller's context, with an error that names it.
func TestWarmSilentRedis(t *testing.T) {
	srv := startSilent(t)
	c := redis.NewClient(&redis.Options{Addr: srv.ln.Addr().String(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	s, err := New(Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	const bound = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	start := time.Now()
	err = s.Warm(ctx)
	if elapsed := time.Since(start); elapsed > bound+timeoutMargin {
		t.Errorf("Warm on a silent Redis took %v, want at most %v", elapsed, bound+timeoutMargin)
	}
	if err == nil || !strings.HasPrefix(err.Error(), "redisquota: warm: ") {
		t.Errorf("Warm on a silent Redis: %v; want a redisquota: warm: error", err)
	}
	if st := s.Stats(); st.Errors != 1 {
		t.Errorf("Stats after a failed Warm: %+v, want 1 error", st)
	}
}
