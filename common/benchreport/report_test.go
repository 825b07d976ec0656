package benchreport

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sample(provider string) *Report {
	r := New(provider)
	r.Command = "make bench"
	r.Add(Row{Key: KeyRestartWrites, Scenario: "restart, nothing changed", Measure: "cloud writes", Value: 0, Target: "0", Met: Met(true)}).
		Add(Row{Key: KeyNodeInitP50, Scenario: "100 Nodes at once", Measure: "time to initialised p50", Value: 0.5, Unit: "s"}).
		Add(Row{Key: KeyMemoryPeakRSS, Scenario: "memory", Measure: "peak RSS", Value: 181.25, Unit: "MiB", Target: "< 150 MiB", Met: Met(false)})
	r.Latencies = []Distribution{{Name: "time to initialised per Node", Unit: "s", Samples: []float64{0.3, 0.1, 0.2, 0.9}}}
	return r
}

func TestPercentile(t *testing.T) {
	s := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for q, want := range map[float64]float64{0.5: 5, 0.99: 10, 0.1: 1, 1: 10} {
		if got := Percentile(s, q); got != want {
			t.Errorf("q=%v: got %v, want %v", q, got, want)
		}
	}
	if s[0] != 5 {
		t.Error("Percentile must not reorder its input")
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("no samples: want 0")
	}
}

func TestWriteReadSummary(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, sample("dummy")); err != nil {
		t.Fatal(err)
	}
	other := sample("aws")
	other.Rows = other.Rows[:1]
	other.Latencies = nil
	if err := Write(dir, other); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"dummy.json", "dummy.md", "dummy.svg", "aws.json", "aws.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "aws.svg")); err == nil {
		t.Error("no latencies: no chart expected")
	}
	md, _ := os.ReadFile(filepath.Join(dir, "dummy.md"))
	for _, want := range []string{"| memory | peak RSS | 181.25 MiB | < 150 MiB (**not met**) |", "| 0.50 s |", "0 (met)", "dummy.svg"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("dummy.md lacks %q:\n%s", want, md)
		}
	}
	rs, err := ReadDir(dir)
	if err != nil || len(rs) != 2 {
		t.Fatalf("ReadDir: %d reports, %v", len(rs), err)
	}
	sum := Summary(rs)
	// One line per key, a column per provider (sorted), empty where a provider lacks the key.
	for _, want := range []string{
		"| measure | target | aws | dummy |",
		"| restart, nothing changed: cloud writes | 0 | 0 | 0 |",
		"| memory: ccm peak RSS | < 150 MiB |  | **181.25 MiB** |",
		"| N Nodes at once: time to initialised p50 |  |  | 0.50 s |",
		"## aws", "## dummy",
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}

func TestReadRejectsBadReports(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"schema":   `{"schema": 2, "provider": "x", "rows": []}`,
		"provider": `{"schema": 1, "provider": "a/b", "rows": []}`,
		"key":      `{"schema": 1, "provider": "x", "rows": [{"value": 1}]}`,
		"unknown":  `{"schema": 1, "provider": "x", "rows": [], "extra": 1}`,
	} {
		p := filepath.Join(dir, name+".json")
		os.WriteFile(p, []byte(body), 0o644)
		_, err := Read(p)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: want an error naming %q, got %v", name, name, err)
		}
	}
	if _, err := ReadDir(dir); err == nil {
		t.Error("ReadDir must fail on a bad file")
	}
}

func TestSVGIsWellFormedAndDrawsEveryDistribution(t *testing.T) {
	many := make([]float64, 5000)
	for i := range many {
		many[i] = float64(i) / 1000
	}
	out := SVG([]Distribution{
		{Name: "nodes <1>", Unit: "s", Samples: []float64{0.1, 0.2}},
		{Name: "services", Unit: "s", Samples: many},
		{Name: "empty", Unit: "s"},
	})
	dec := xml.NewDecoder(strings.NewReader(string(out)))
	polylines, titles := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed XML: %v", err)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "polyline":
				polylines++
				for _, a := range se.Attr {
					if a.Name.Local == "points" && strings.Count(a.Value, ",") > 2*maxPoints+4 {
						t.Errorf("too many points: %d", strings.Count(a.Value, ","))
					}
				}
			case "text":
				titles++
			}
		}
	}
	if polylines != 2 {
		t.Errorf("want a CDF line for each non-empty distribution, got %d", polylines)
	}
	if !strings.Contains(string(out), "nodes &lt;1&gt;: n=2, p50 0.1 s, p99 0.2 s") {
		t.Errorf("title missing or not escaped:\n%s", out[:400])
	}
}

func TestNiceCeil(t *testing.T) {
	for v, want := range map[float64]float64{0.63: 0.8, 10.95: 15, 3: 3, 28.7: 30, 100: 100, 0.012: 0.015} {
		if got := niceCeil(v); got < want*0.999 || got > want*1.001 {
			t.Errorf("niceCeil(%v) = %v, want %v", v, got, want)
		}
	}
}
