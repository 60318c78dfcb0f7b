package logtest

import (
	"bytes"
	"log/slog"
	"testing"
)

func TestRecords(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("one", "k", 1)
	log.Warn("two")
	recs := Records(t, &buf)
	if len(recs) != 2 || recs[0]["msg"] != "one" || recs[0]["k"] != 1.0 || recs[1]["level"] != "WARN" {
		t.Errorf("Records = %v", recs)
	}
}
