package main

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPlanChurnReplays(t *testing.T) {
	a, b := planChurn(42, 200, 10), planChurn(42, 200, 10)
	if !reflect.DeepEqual(a, b) || a.Fingerprint() != b.Fingerprint() {
		t.Fatalf("the same seed gave two plans (%s, %s)", a.Fingerprint(), b.Fingerprint())
	}
	c := planChurn(43, 200, 10)
	if reflect.DeepEqual(a.Ops, c.Ops) || reflect.DeepEqual(a.Kills, c.Kills) || a.Fingerprint() == c.Fingerprint() {
		t.Errorf("seeds 42 and 43 gave the same operations or kill points")
	}
	// The sizes are part of the plan too.
	if d := planChurn(42, 30, 3); reflect.DeepEqual(a, d) {
		t.Errorf("different sizes gave the same plan")
	}
}

func TestPlanChurnIsPlayable(t *testing.T) {
	for _, seed := range []int64{1, 2, 3, 1732456789123456789} {
		for _, sz := range []struct{ services, kills int }{{30, 3}, {200, 10}} {
			p := planChurn(seed, sz.services, sz.kills)
			alive := map[string]bool{}
			created := 0
			for i, op := range p.Ops {
				if op.Pause < 0 || op.Pause >= 300*time.Millisecond {
					t.Errorf("seed %d op %d: pause %v outside [0, 300ms)", seed, i, op.Pause)
				}
				switch op.Kind {
				case opCreate:
					if alive[op.Service] || op.Service == "" {
						t.Fatalf("seed %d op %d: creates %q, which exists", seed, i, op.Service)
					}
					alive[op.Service] = true
					created++
				case opUpdate, opDelete:
					if !alive[op.Service] {
						t.Fatalf("seed %d op %d: %s of %q, which does not exist", seed, i, op.Kind, op.Service)
					}
					if op.Kind == opDelete {
						delete(alive, op.Service)
					} else if op.Port < 1000 || op.Port >= 2000 {
						t.Errorf("seed %d op %d: port %d", seed, i, op.Port)
					}
				default:
					t.Fatalf("seed %d op %d: kind %q", seed, i, op.Kind)
				}
			}
			if created != sz.services {
				t.Errorf("seed %d: %d created, want %d", seed, created, sz.services)
			}
			live := p.live()
			if len(live) != len(alive) {
				t.Errorf("seed %d: live() = %d Services, the ops leave %d", seed, len(live), len(alive))
			}
			if len(p.Kills) != sz.kills {
				t.Fatalf("seed %d: %d kills, want %d", seed, len(p.Kills), sz.kills)
			}
			for i, k := range p.Kills {
				lo, hi := i*len(p.Ops)/sz.kills, (i+1)*len(p.Ops)/sz.kills
				if k.AfterOp < lo || k.AfterOp >= hi {
					t.Errorf("seed %d kill %d: after op %d, outside its stretch [%d, %d)", seed, i, k.AfterOp, lo, hi)
				}
				if k.Delay < 0 || k.Delay >= 300*time.Millisecond || k.Down < 0 || k.Down >= 2*time.Second {
					t.Errorf("seed %d kill %d: delay %v, down %v", seed, i, k.Delay, k.Down)
				}
			}
		}
	}
}

func TestReplayCommand(t *testing.T) {
	if got, want := replayCommand(false, "aws", "churn", 7), `make faults PROVIDERS=aws FAULTS_ARGS="--scenarios=churn --seed=7"`; got != want {
		t.Errorf("replayCommand = %s, want %s", got, want)
	}
	if got := replayCommand(true, "dummy", "failover,churn", 7); !strings.HasPrefix(got, "make faults-short PROVIDERS=dummy ") {
		t.Errorf("short replay = %s, want make faults-short", got)
	}
}

func TestJournalHistory(t *testing.T) {
	j := &journal{start: time.Now().Add(-time.Minute)}
	j.opDone(0, churnOp{Kind: opCreate, Service: "c-1"})
	j.opDone(1, churnOp{Kind: opCreate, Service: "c-18"})
	j.opDone(2, churnOp{Kind: opUpdate, Service: "c-18", Port: 1443})
	j.killed(0, churnKill{AfterOp: 2}, "ccm-aws-3")
	j.opDone(3, churnOp{Kind: opDelete, Service: "c-18"})
	j.killed(1, churnKill{AfterOp: 3}, "ccm-aws-4")
	ops, _, after := j.history("c-18")
	if len(ops) != 3 || !strings.HasPrefix(ops[0], "create (op 1 ") || !strings.HasPrefix(ops[1], "port 1443 (op 2 ") || !strings.HasPrefix(ops[2], "delete (op 3 ") {
		t.Errorf("history of c-18 = %q", ops)
	}
	if len(after) != 1 || after[0].CCM != "ccm-aws-4" || after[0].Index != 2 {
		t.Errorf("kills after c-18's last operation = %+v, want #2 of ccm-aws-4", after)
	}
	if ops, _, _ := j.history("c-2"); ops != nil {
		t.Errorf("history of c-2 = %q, want none", ops)
	}
}

func TestLinesAbout(t *testing.T) {
	log := strings.Join([]string{
		`I1124 controller.go:403] Ensuring load balancer for service churn/c-18`,
		`I1124 loadbalancer.go:90] "Deleted ELB" service="churn/c-18" name="a1b2"`,
		`I1124 controller.go:384] Deleting existing load balancer for service churn/c-180`,
		`I1124 round_trippers.go:632] Response Body: {"items":[{"service":"churn/c-18"}]}`,
		`I1124 other.go:1] key churn/c-1`,
	}, "\n")
	got := linesAbout(log, "churn/c-18", 3)
	if len(got) != 2 || !strings.Contains(got[0], "Ensuring") || !strings.Contains(got[1], `"Deleted ELB"`) {
		t.Errorf("lines about churn/c-18 = %q, want the Ensuring and Deleted ELB lines (not c-180's, not a body)", got)
	}
	if got := linesAbout(log, "churn/c-18", 1); len(got) != 1 || !strings.Contains(got[0], `"Deleted ELB"`) {
		t.Errorf("last line about churn/c-18 = %q, want the Deleted ELB line", got)
	}
	if got := linesAbout(log, "churn/c-1", 3); len(got) != 1 || got[0] != `I1124 other.go:1] key churn/c-1` {
		t.Errorf("lines about churn/c-1 = %q", got)
	}
	if got := linesAbout(log, "churn/c-7", 3); got != nil {
		t.Errorf("lines about churn/c-7 = %q, want none", got)
	}
}
