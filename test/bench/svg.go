//go:build bench

package main

import (
	"fmt"
	"html"
	"math"
	"os"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	svgWidth    = 960.0
	svgLeft     = 70.0
	svgRight    = 20.0
	readyHeight = 190.0
	callsHeight = 110.0
	panelGap    = 40.0
	runHeight   = 30 + readyHeight + panelGap + callsHeight + 50
)

// writeSVG draws, for each run, the rules Ready over time against the
// physical-limit line, and GCP calls per second split into reads, writes
// and operation polls, with the phases marked.
func (rep *report) writeSVG(path string) error {
	var b strings.Builder
	var curves strings.Builder
	gh := rep.drawGrowth(&curves, 40)
	// Growth points are drawn as curves above, not one by one.
	var runs []*result
	for _, r := range rep.Runs {
		if r.Scenario.Curve == "" {
			runs = append(runs, r)
		}
	}
	h := gh + runHeight*float64(len(runs)) + 40
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", svgWidth, h, svgWidth, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="14" font-weight="bold">%s</text>`+"\n", svgLeft,
		html.EscapeString(fmt.Sprintf("provider-cloudarmor bench — op latency %s, poll %s, load %s", rep.Config.Latency, rep.Config.Poll, rep.LoadAfter)))
	b.WriteString(curves.String())
	for i, r := range runs {
		drawRun(&b, r, 40+gh+float64(i)*runHeight)
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func drawRun(b *strings.Builder, r *result, top float64) {
	if len(r.Samples) == 0 {
		return
	}
	plotW := svgWidth - svgLeft - svgRight
	tMax := math.Max(r.Samples[len(r.Samples)-1].T, 1)
	x := func(t float64) float64 { return svgLeft + plotW*t/tMax }
	total := math.Max(1, float64(r.Scenario.Policies*r.Scenario.Rules))
	conv := r.phase("converge")

	title := fmt.Sprintf("%s: all Ready in %.1f s, limit %.1f s (%.2f×)", r.Scenario.Name, conv.Seconds, r.LimitSeconds, conv.Seconds/r.LimitSeconds)
	if r.Scenario.Null || r.LimitSeconds == 0 {
		title = fmt.Sprintf("%s: all Ready in %.1f s", r.Scenario.Name, conv.Seconds)
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="13" font-weight="bold">%s</text>`+"\n", svgLeft, top+14, html.EscapeString(title))

	// Rules Ready.
	y0 := top + 30
	yR := func(v float64) float64 { return y0 + readyHeight - readyHeight*v/total }
	axes(b, y0, readyHeight, tMax, total, "rules Ready")
	limit := fmt.Sprintf("%.1f,%.1f %.1f,%.1f %.1f,%.1f", x(conv.Start), yR(0), x(conv.Start+r.LimitSeconds), yR(total), x(tMax), yR(total))
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="#999" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n", limit)
	var pts []string
	for _, s := range r.Samples {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.T), yR(float64(s.RulesReady))))
	}
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="#1f77b4" stroke-width="2"/>`+"\n", strings.Join(pts, " "))
	legend(b, svgLeft+plotW-260, y0+12, [][2]string{{"#1f77b4", "rules Ready"}, {"#999", "physical limit (R × latency)"}})

	// Calls per second, stacked: reads, writes, operation polls.
	y1 := y0 + readyHeight + panelGap
	type bar struct{ t0, t1, reads, writes, other float64 }
	var bars []bar
	peak := 1.0
	for i := 1; i < len(r.Samples); i++ {
		a, c := r.Samples[i-1], r.Samples[i]
		dt := c.T - a.T
		if dt <= 0 {
			continue
		}
		br := bar{t0: a.T, t1: c.T, reads: float64(c.Reads-a.Reads) / dt, writes: float64(c.Mutations-a.Mutations) / dt}
		br.other = math.Max(0, float64(c.Calls-a.Calls)/dt-br.reads-br.writes)
		peak = math.Max(peak, br.reads+br.writes+br.other)
		bars = append(bars, br)
	}
	peak = niceCeil(peak)
	yC := func(v float64) float64 { return y1 + callsHeight - callsHeight*v/peak }
	axes(b, y1, callsHeight, tMax, peak, "GCP calls/s")
	for _, br := range bars {
		w := math.Max(x(br.t1)-x(br.t0), 0.5)
		base := 0.0
		for _, part := range []struct {
			v     float64
			color string
		}{{br.reads, "#2ca02c"}, {br.writes, "#ff7f0e"}, {br.other, "#bbb"}} {
			if part.v <= 0 {
				continue
			}
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x(br.t0), yC(base+part.v), w, yC(base)-yC(base+part.v), part.color)
			base += part.v
		}
	}
	legend(b, svgLeft+plotW-260, y1+12, [][2]string{{"#2ca02c", "policy reads"}, {"#ff7f0e", "writes"}, {"#bbb", "operation waits"}})

	// Phases.
	for _, p := range r.Phases {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#d62728" stroke-dasharray="3 3"/>`+"\n", x(p.Start), x(p.Start), y0, y1+callsHeight)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="#d62728">%s</text>`+"\n", x(p.Start)+3, y0+readyHeight+14, p.Name)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">seconds since apply</text>`+"\n", svgLeft+plotW/2, y1+callsHeight+32)
}

// axes draws a plot frame with y ticks at 0, half and max and x ticks.
func axes(b *strings.Builder, top, height, tMax, yMax float64, label string) {
	plotW := svgWidth - svgLeft - svgRight
	fmt.Fprintf(b, `<rect x="%.0f" y="%.1f" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", svgLeft, top, plotW, height)
	for _, f := range []float64{0, 0.5, 1} {
		y := top + height - height*f
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", svgLeft-5, y+4, trim(yMax*f))
		fmt.Fprintf(b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", svgLeft, svgLeft+plotW, y, y)
	}
	fmt.Fprintf(b, `<text transform="translate(14 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+height/2, label)
	step := niceCeil(tMax / 10)
	for t := 0.0; t <= tMax; t += step {
		xx := svgLeft + plotW*t/tMax
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", xx, top+height+13, trim(t))
	}
}

func legend(b *strings.Builder, x, y float64, items [][2]string) {
	for i, it := range items {
		yy := y + float64(i)*14
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/>`+"\n", x, yy-9, it[0])
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x+14, yy, html.EscapeString(it[1]))
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func trim(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
