package redistest

import (
	"bufio"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestRestartLosesData checks the life of a Server: it answers at Addr,
// Stop makes it unreachable, and Restart brings it back on the same address
// with none of the keys it had.
func TestRestartLosesData(t *testing.T) {
	s := Start(t)
	addr := s.Addr()
	if got := do(t, addr, "SET k v"); got != "+OK" {
		t.Fatalf("SET answered %q", got)
	}
	if got := do(t, addr, "GET k"); got != "$1" {
		t.Fatalf("GET before restart answered %q, want a 1-byte value", got)
	}

	s.Stop()
	if err := ping(addr); err == nil {
		t.Fatal("the server still answers PING after Stop")
	}
	s.Stop() // a second Stop does nothing

	s.Restart()
	if s.Addr() != addr {
		t.Fatalf("Restart moved the server from %s to %s", addr, s.Addr())
	}
	if got := do(t, addr, "GET k"); got != "$-1" {
		t.Fatalf("GET after restart answered %q, want nil: the data should be lost", got)
	}
}

// TestStartWithoutRedisServer checks that Start fails the test, saying what
// to install, when redis-server is not on PATH.
func TestStartWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ft := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(ft)
		t.Error("Start returned without redis-server on PATH")
	}()
	<-done
	if !strings.Contains(ft.msg, "apt-get install redis-server") {
		t.Fatalf("Start failed with %q, want it to say how to install redis-server", ft.msg)
	}
}

// fatalTB records the message of Fatalf and ends its goroutine, as
// testing.T does, without failing the real test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// do sends one inline command to addr and returns the first line of the
// answer, without its CRLF.
func do(t *testing.T, addr, command string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(c, "%s\r\n", command); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(line, "\r\n")
}

// TestFreezeThaw checks that a frozen server answers nothing, and answers
// again once thawed.
func TestFreezeThaw(t *testing.T) {
	s := Start(t)
	s.Freeze()
	if err := ping(s.Addr()); err == nil {
		t.Fatal("a frozen server answered PING")
	}
	s.Thaw()
	if err := ping(s.Addr()); err != nil {
		t.Fatalf("thawed: %v", err)
	}
}
