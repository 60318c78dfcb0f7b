package retry

import (
	"math"
	"testing"
	"time"
)

func TestDelayExact(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name string
		p    *Policy
		o    Outcome
		n    int
		want time.Duration
	}{
		{"transient 1", &Policy{Rand: constRand(0.5)}, Outcome{Class: ClassTransient}, 1, 50 * ms},
		{"transient 2", &Policy{Rand: constRand(0.5)}, Outcome{Class: ClassTransient}, 2, 100 * ms},
		{"transient 3", &Policy{Rand: constRand(0.5)}, Outcome{Class: ClassTransient}, 3, 200 * ms},
		{"transient 8", &Policy{Rand: constRand(0.5)}, Outcome{Class: ClassTransient}, 8, 6400 * ms},
		{"transient 9 capped", &Policy{Rand: constRand(0.5)}, Outcome{Class: ClassTransient}, 9, 10 * time.Second},
		{"transient 50 capped", &Policy{Rand: constRand(0.5)}, Outcome{Class: ClassTransient}, 50, 10 * time.Second},
		{"throttle 1", &Policy{Rand: constRand(0.5)}, Outcome{Class: ClassThrottle}, 1, 500 * ms},
		{"throttle 5", &Policy{Rand: constRand(0.5)}, Outcome{Class: ClassThrottle}, 5, 8 * time.Second},
		{"throttle 6 capped", &Policy{Rand: constRand(0.5)}, Outcome{Class: ClassThrottle}, 6, 10 * time.Second},
		{"throttle near 1", &Policy{Rand: constRand(0.999)}, Outcome{Class: ClassThrottle}, 1, 999 * ms},
		{"rand 0", &Policy{Rand: constRand(0)}, Outcome{Class: ClassThrottle}, 3, 0},
		{"rand above 1 clamped", &Policy{Rand: constRand(1.5)}, Outcome{Class: ClassTransient}, 1, 100 * ms},
		{"rand NaN", &Policy{Rand: constRand(math.NaN())}, Outcome{Class: ClassTransient}, 1, 0},
		{"rand negative", &Policy{Rand: constRand(-1)}, Outcome{Class: ClassTransient}, 1, 0},
		{"n 0 is 1", &Policy{Rand: constRand(0.5)}, Outcome{Class: ClassTransient}, 0, 50 * ms},
		{"custom", &Policy{Rand: constRand(0.25), BaseDelay: 10 * ms, Multiplier: 3, MaxDelay: time.Second}, Outcome{Class: ClassTransient}, 3, 22500 * time.Microsecond},
		{"custom capped", &Policy{Rand: constRand(0.25), BaseDelay: 10 * ms, Multiplier: 3, MaxDelay: time.Second}, Outcome{Class: ClassTransient}, 6, 250 * ms},
		{"hint is a floor", &Policy{Rand: constRand(0.5)}, Outcome{Class: ClassThrottle, Hint: 3 * time.Second}, 1, 3 * time.Second},
		{"backoff above hint", &Policy{Rand: constRand(0.5)}, Outcome{Class: ClassThrottle, Hint: 100 * ms}, 1, 500 * ms},
		{"hint capped", &Policy{Rand: constRand(0.5)}, Outcome{Class: ClassThrottle, Hint: time.Hour}, 1, time.Minute},
		{"hint capped custom", &Policy{Rand: constRand(0.5), MaxHint: 10 * time.Second}, Outcome{Class: ClassThrottle, Hint: time.Hour}, 1, 10 * time.Second},
		{"nil policy rand 0 hint", nil, Outcome{Class: ClassThrottle, Hint: time.Hour}, 1, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.Delay(tt.o, tt.n); got != tt.want {
				t.Errorf("Delay(%+v, %d) = %v, want %v", tt.o, tt.n, got, tt.want)
			}
		})
	}
}

func TestDelayDefaultRandInBounds(t *testing.T) {
	var p Policy
	for range 1000 {
		if d := p.Delay(Outcome{Class: ClassThrottle}, 2); d < 0 || d > 2*time.Second {
			t.Fatalf("Delay = %v, want within [0, 2s]", d)
		}
	}
}

func TestPolicyDefaults(t *testing.T) {
	var p *Policy
	if got := p.maxAttempts(); got != 5 {
		t.Errorf("maxAttempts = %d, want 5", got)
	}
	if got := p.maxElapsed(); got != 2*time.Minute {
		t.Errorf("maxElapsed = %v, want 2m", got)
	}
	if got := (&Policy{MaxElapsed: -1}).maxElapsed(); got != 0 {
		t.Errorf("maxElapsed(-1) = %v, want 0 (no limit)", got)
	}
	if p.budget() != DefaultBudget() {
		t.Error("nil Policy does not use DefaultBudget")
	}
	if (&Policy{NoBudget: true}).budget() != nil {
		t.Error("NoBudget Policy has a budget")
	}
}
