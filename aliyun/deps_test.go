package aliyun

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoSDK checks that a program using the v2 SDK through this
// package builds no package of the v1 SDK (a 42 MB module), nor of the
// v2 SDK itself: this package reads both through interfaces.
func TestImportsNoSDK(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH:", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages, want this package's whole tree:\n%s", len(deps), out)
	}
	for _, p := range deps {
		if strings.HasPrefix(p, "github.com/aliyun/") || strings.HasPrefix(p, "github.com/alibabacloud-go/") {
			t.Errorf("this package builds %s", p)
		}
	}
}
