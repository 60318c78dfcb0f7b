package redisquota

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-go/tollgate/quotastore"
)

// silentRedis is a TCP server that accepts connections and reads from
// them, but never answers: a Redis that hangs.
type silentRedis struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startSilent(t *testing.T) *silentRedis {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentRedis{ln: ln}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *silentRedis) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			buf := make([]byte, 4096)
			for {
				if _, err := c.Read(buf); err != nil {
					return
				}
			}
		}()
	}
}

// close stops listening, closes every connection and waits for the
// server's goroutines to end.
func (s *silentRedis) close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// TestTimeoutSilentRedis checks that every method fails within Timeout when
// Redis accepts the connection and never answers, and that a caller's
// shorter deadline wins.
func TestTimeoutSilentRedis(t *testing.T) {
	srv := startSilent(t)
	c := redis.NewClient(&redis.Options{Addr: srv.ln.Addr().String(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	const timeout = 50 * time.Millisecond
	s, err := New(Config{Client: c, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	taken := quotastore.Reservation{OK: true, Token: 1}
	for range 2 { // a new connection, then one from the pool
		for name, call := range methods(s, taken) {
			start := time.Now()
			err := call(context.Background())
			elapsed := time.Since(start)
			t.Logf("%s %s: %v after %v", name, "on a silent Redis", err, elapsed)
			if err == nil || !strings.HasPrefix(err.Error(), "redisquota: "+name+": ") {
				t.Errorf("%s on a silent Redis: %v; want a redisquota: %s: error", name, err, name)
			}
			if elapsed < timeout || elapsed > timeout+timeoutMargin {
				t.Errorf("%s on a silent Redis took %v, want %v to %v", name, elapsed, timeout, timeout+timeoutMargin)
			}
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Reserve(ctx, tenant, every100ms, forever)
	if elapsed := time.Since(start); err == nil || elapsed > 10*time.Millisecond+timeoutMargin {
		t.Errorf("Reserve with a 10 ms deadline on a silent Redis: %v after %v", err, elapsed)
	}
}
