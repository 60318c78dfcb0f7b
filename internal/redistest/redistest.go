// Package redistest runs a throwaway redis-server for tests, as httptest
// runs an HTTP server: on a free loopback port, with no persistence, stopped
// when the test ends.
//
// It needs the redis-server binary on PATH (Debian's redis-server package;
// CI installs it). Without it, Start fails the test and says so.
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long Start and Restart wait for the server to
// answer PING.
const startTimeout = 5 * time.Second

// stopTimeout bounds how long Stop waits for the server to exit after
// SIGTERM before it kills it.
const stopTimeout = 5 * time.Second

// Server is a redis-server process started by Start. Its methods must be
// called from the test's goroutine.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	log  *os.File      // the server's output, for failure messages
}

// Start starts redis-server on a free port of 127.0.0.1, keeping nothing on
// disk (--save "" --appendonly no) and working in a temporary directory. It
// returns once the server answers PING, and stops it when the test ends.
// It fails the test if redis-server is not on PATH or does not answer
// within 5 s.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redistest: redis-server is not on PATH (%v); install Debian's redis-server package (apt-get install redis-server), as CI does", err)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	log, err := os.Create(filepath.Join(s.dir, "redis.log"))
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	s.log = log
	t.Cleanup(func() {
		s.Stop()
		log.Close()
	})
	// Another process may take the free port before redis-server binds it:
	// try a few.
	for range 3 {
		if s.port, err = freePort(); err != nil {
			break
		}
		if err = s.start(); err == nil {
			return s
		}
	}
	t.Fatalf("redistest: %v", err)
	return nil
}

// Addr returns the server's address, host:port.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Stop stops the server and waits for it to exit: SIGTERM, then SIGKILL
// after 5 s. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a frozen server acts on SIGTERM only once thawed
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Freeze stops the server's process (SIGSTOP) without closing its
// connections or its port: a Redis that hangs, whose clients see their
// calls time out rather than fail. Thaw lets it go on.
func (s *Server) Freeze() { s.signal(syscall.SIGSTOP) }

// Thaw lets a frozen server go on (SIGCONT), answering what it was sent
// meanwhile.
func (s *Server) Thaw() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	if s.cmd == nil {
		s.t.Fatalf("redistest: %v to a server that is not running", sig)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: %v: %v", sig, err)
	}
}

// Restart stops the server and starts a new one on the same port, with no
// data: as a restart of a Redis that kept nothing on disk, it has lost every
// key and its script cache. It fails the test if the new server does not
// answer.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

// start starts redis-server on s.port and waits until it answers PING.
func (s *Server) start() error {
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--logfile", "",
	)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done

	deadline := time.Now().Add(startTimeout)
	for {
		err := ping(s.Addr())
		if err == nil {
			return nil
		}
		select {
		case <-done:
			s.cmd = nil
			return fmt.Errorf("redis-server on port %d exited at start: %s", s.port, s.logTail())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("redis-server on port %d did not answer PING within %v (%v): %s", s.port, startTimeout, err, s.logTail())
		}
	}
}

// logTail returns the last lines the server wrote.
func (s *Server) logTail() string {
	b, err := os.ReadFile(s.log.Name())
	if err != nil {
		return err.Error()
	}
	const keep = 2000
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return string(b)
}

// ping sends PING to addr and checks the answer.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("finding a free port: not a TCP address")
	}
	return addr.Port, nil
}
