package benchreport

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strings"
)

// Chart geometry: one panel per distribution, stacked.
const (
	svgWidth    = 720
	panelHeight = 220
	padLeft     = 60
	padRight    = 20
	padTop      = 36
	padBottom   = 40
	maxPoints   = 600 // a CDF of more samples is drawn through this many quantiles
)

// SVG draws each distribution as a cumulative distribution (share of objects done by time t),
// with its median and 99th percentile marked.
func SVG(ds []Distribution) []byte {
	h := panelHeight * max(len(ds), 1)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, h, svgWidth, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgWidth, h)
	for i, d := range ds {
		panel(&b, d, float64(i*panelHeight))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

func panel(b *strings.Builder, d Distribution, top float64) {
	s := append([]float64(nil), d.Samples...)
	sort.Float64s(s)
	x0, x1 := float64(padLeft), float64(svgWidth-padRight)
	y0, y1 := top+panelHeight-padBottom, top+padTop // y0: 0 %, y1: 100 %
	title := fmt.Sprintf("%s: n=%d", d.Name, len(s))
	if len(s) > 0 {
		title += fmt.Sprintf(", p50 %s, p99 %s", num(Percentile(s, 0.5), d.Unit), num(Percentile(s, 0.99), d.Unit))
	}
	fmt.Fprintf(b, `<text x="%d" y="%.0f" font-weight="bold">%s</text>`+"\n", padLeft, top+20, html.EscapeString(title))
	xmax := niceCeil(maxOr(s, 1))
	sx := func(v float64) float64 { return x0 + v/xmax*(x1-x0) }
	sy := func(q float64) float64 { return y0 - q*(y0-y1) }
	for _, q := range []float64{0, 0.25, 0.5, 0.75, 1} { // horizontal grid with share labels
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, x0, sy(q), x1, sy(q))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f%%</text>`+"\n", x0-6, sy(q)+4, q*100)
	}
	for i := 0; i <= 5; i++ { // x ticks
		v := xmax * float64(i) / 5
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`, sx(v), y0, sx(v), y0+4)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", sx(v), y0+18, num(v, d.Unit))
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", x0, y0, x1, y0)
	if len(s) == 0 {
		return
	}
	// Step CDF: after the k-th smallest sample, k/n of the objects are done.
	var pts strings.Builder
	fmt.Fprintf(&pts, "%.1f,%.1f", sx(0), sy(0))
	n := len(s)
	step := max(1, (n+maxPoints-1)/maxPoints)
	prevQ := 0.0
	for k := step - 1; k < n; k += step {
		q := float64(k+1) / float64(n)
		fmt.Fprintf(&pts, " %.1f,%.1f %.1f,%.1f", sx(s[k]), sy(prevQ), sx(s[k]), sy(q))
		prevQ = q
	}
	if prevQ < 1 {
		fmt.Fprintf(&pts, " %.1f,%.1f %.1f,%.1f", sx(s[n-1]), sy(prevQ), sx(s[n-1]), sy(1))
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="%s"/>`+"\n", pts.String())
	for _, m := range []struct {
		q     float64
		label string
	}{{0.5, "p50"}, {0.99, "p99"}} {
		x := sx(Percentile(s, m.q))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#d62728" stroke-dasharray="4 3"/>`, x, y0, x, y1)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="#d62728">%s</text>`+"\n", x+3, y1+12, m.label)
	}
}

func maxOr(s []float64, def float64) float64 {
	if len(s) == 0 || s[len(s)-1] <= 0 {
		return def
	}
	return s[len(s)-1]
}

// niceCeil rounds v up to a round number (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of
// ten), so that the five axis ticks are round too.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func num(v float64, unit string) string {
	s := fmt.Sprintf("%.3g", v)
	if unit != "" {
		s += " " + unit
	}
	return s
}
