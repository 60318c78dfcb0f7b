// Package logtest reads back what a log/slog JSON handler wrote, for tests
// that check log records.
package logtest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Records parses buf, written by a slog.JSONHandler, into its records, one
// map per line. It fails the test on a line that is not a JSON object.
func Records(t testing.TB, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}
