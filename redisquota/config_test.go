package redisquota

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestNewDefaults(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	s, err := New(Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	if s.prefix != DefaultPrefix || s.timeout != DefaultTimeout || s.peerTTL != int64(DefaultPeerTTL/time.Microsecond) {
		t.Errorf("defaults: prefix %q, timeout %v, peerTTL %d µs", s.prefix, s.timeout, s.peerTTL)
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(s.id) {
		t.Errorf("default ID = %q, want 16 hex digits", s.id)
	}
	s2, err := New(Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	if s2.id == s.id {
		t.Errorf("two Stores drew the same ID %q", s.id)
	}
	s3, err := New(Config{Client: c, Prefix: "p:", Timeout: time.Second, PeerTTL: time.Minute, ID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if s3.prefix != "p:" || s3.timeout != time.Second || s3.peerTTL != 60000000 || s3.id != "x" {
		t.Errorf("set fields: prefix %q, timeout %v, peerTTL %d µs, ID %q", s3.prefix, s3.timeout, s3.peerTTL, s3.id)
	}
}

func TestNewRefuses(t *testing.T) {
	client := func(o redis.Options) redis.UniversalClient {
		o.Addr = "127.0.0.1:1"
		c := redis.NewClient(&o)
		t.Cleanup(func() { c.Close() })
		return c
	}
	good := client(redis.Options{ContextTimeoutEnabled: true})
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	t.Cleanup(func() { cluster.Close() })
	tests := []struct {
		name string
		cfg  Config
		want string // in the error
	}{
		{"nil client", Config{}, "Client is nil"},
		{"no context timeouts", Config{Client: client(redis.Options{})}, "ContextTimeoutEnabled"},
		{"cluster without context timeouts", Config{Client: cluster}, "ContextTimeoutEnabled"},
		{"read deadlines off", Config{Client: client(redis.Options{ContextTimeoutEnabled: true, ReadTimeout: -2})}, "-2"},
		{"write deadlines off", Config{Client: client(redis.Options{ContextTimeoutEnabled: true, WriteTimeout: -2})}, "-2"},
		{"brace in prefix", Config{Client: good, Prefix: "a{b}:"}, "hash slot"},
		{"negative timeout", Config{Client: good, Timeout: -time.Second}, "negative"},
		{"negative peer TTL", Config{Client: good, PeerTTL: -time.Second}, "negative"},
	}
	for _, tt := range tests {
		s, err := New(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "redisquota: ") {
			t.Errorf("%s: New = %v, %v; want an error about %q", tt.name, s, err, tt.want)
		}
	}
	// A ReadTimeout of -1 (no timeout) still lets deadlines through.
	if _, err := New(Config{Client: client(redis.Options{ContextTimeoutEnabled: true, ReadTimeout: -1})}); err != nil {
		t.Errorf("ReadTimeout -1: %v", err)
	}
}
