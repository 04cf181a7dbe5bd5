//go:build bench

package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Growth panels: one row per figure, the rule-object curve on the left and
// the inline-policy curve on the right.
const (
	gPanelH   = 130.0
	gRowGap   = 62.0
	gColGap   = 70.0
	gTitleGap = 40.0
)

type series struct {
	name  string
	color string
	ys    []float64
}

// A growthFigure is one row of panels.
type growthFigure struct {
	title  string
	logY   bool
	value  func(p curvePoint) []float64 // one value per series
	names  []string
	colors []string
	// target draws a dashed line on the rule-object panel, 0 for none.
	target      float64
	targetLabel string
}

func growthFigures() []growthFigure {
	return []growthFigure{
		{title: "apply → all Ready (s, log)", logY: true, names: []string{"converge"}, colors: []string{"#1f77b4"},
			value: func(p curvePoint) []float64 { return []float64{p.ConvergeS} }},
		{title: "steady GCP reads per poll (log)", logY: true, names: []string{"reads per poll", "policies (1 read each)"}, colors: []string{"#2ca02c", "#999"},
			value: func(p curvePoint) []float64 { return []float64{p.ReadsPerPoll, float64(p.Policies)} }},
		{title: "provider memory (MiB)", names: []string{"RssAnon", "RssFile", "VmHWM"}, colors: []string{"#d62728", "#8c564b", "#ff7f0e"},
			value:  func(p curvePoint) []float64 { return []float64{p.AnonMiB, p.FileMiB, p.HWMMiB} },
			target: targetAnonMiB, targetLabel: fmt.Sprintf("RssAnon target at 1,000: %.0f MiB", targetAnonMiB)},
		{title: "steady provider CPU (cores, log)", logY: true, names: []string{"steady CPU"}, colors: []string{"#9467bd"},
			value:  func(p curvePoint) []float64 { return []float64{p.SteadyCores} },
			target: targetSteadyCores, targetLabel: fmt.Sprintf("target at 1,000: %.2f", targetSteadyCores)},
		{title: "API server writes while converging (log)", logY: true, names: []string{"writes"}, colors: []string{"#17becf"},
			value: func(p curvePoint) []float64 { return []float64{p.APIWrites} }},
	}
}

// drawGrowth draws the growth curves at top and returns their height (0
// without a curve).
func (rep *report) drawGrowth(b *strings.Builder, top float64) float64 {
	if len(rep.Curve) == 0 {
		return 0
	}
	var rules, pols []curvePoint
	for _, p := range rep.Curve {
		if p.Curve == curveRules {
			rules = append(rules, p)
		} else {
			pols = append(pols, p)
		}
	}
	colW := (svgWidth - svgLeft - svgRight - gColGap) / 2
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="13" font-weight="bold">%s</text>`+"\n", svgLeft, top+14,
		html.EscapeString(fmt.Sprintf("growth, --poll=%s: rule objects over %d policies (left), policies with inline rules (right)", rep.Config.GrowthPoll, growthPolicies)))
	y := top + gTitleGap
	for _, f := range growthFigures() {
		for col, pts := range [][]curvePoint{rules, pols} {
			if len(pts) == 0 {
				continue
			}
			x0 := svgLeft + float64(col)*(colW+gColGap)
			xs := make([]float64, len(pts))
			ss := make([]series, len(f.names))
			for i := range ss {
				ss[i] = series{name: f.names[i], color: f.colors[i]}
			}
			for i, p := range pts {
				xs[i] = float64(p.X)
				for j, v := range f.value(p) {
					ss[j].ys = append(ss[j].ys, v)
				}
			}
			xl := "rule objects"
			logX := false
			target := 0.0
			if col == 1 {
				xl, logX = "policies (log)", true
			} else {
				target = f.target
			}
			panel(b, x0, y, colW, gPanelH, f.title, xl, xs, ss, logX, f.logY, target, f.targetLabel)
		}
		y += gPanelH + gRowGap
	}
	return y - top
}

// panel draws one figure against one scale.
func panel(b *strings.Builder, x0, y0, w, h float64, title, xLabel string, xs []float64, ss []series, logX, logY bool, target float64, targetLabel string) {
	// Ranges.
	xMin, xMax := xs[0], xs[0]
	for _, v := range xs {
		xMin, xMax = math.Min(xMin, v), math.Max(xMax, v)
	}
	yMax := 0.0
	yMin := math.Inf(1)
	for _, s := range ss {
		for _, v := range s.ys {
			yMax = math.Max(yMax, v)
			if v > 0 {
				yMin = math.Min(yMin, v)
			}
		}
	}
	yMax = math.Max(yMax, target)
	if target > 0 {
		yMin = math.Min(yMin, target)
	}
	if math.IsInf(yMin, 1) {
		yMin = 1
	}
	var yLo, yHi float64
	if logY {
		yLo, yHi = math.Pow(10, math.Floor(math.Log10(yMin))), math.Pow(10, math.Ceil(math.Log10(math.Max(yMax, yMin*10))))
	} else {
		yLo, yHi = 0, niceCeil(math.Max(yMax, 1e-9))
	}
	xf := func(v float64) float64 {
		if logX {
			lo, hi := math.Log10(math.Max(xMin, 1)), math.Log10(math.Max(xMax, xMin*10))
			return x0 + w*(math.Log10(math.Max(v, 1))-lo)/(hi-lo)
		}
		return x0 + w*(v-0)/math.Max(xMax, 1)
	}
	yf := func(v float64) float64 {
		if logY {
			v = math.Max(v, yLo)
			return y0 + h - h*(math.Log10(v)-math.Log10(yLo))/(math.Log10(yHi)-math.Log10(yLo))
		}
		return y0 + h - h*(v-yLo)/(yHi-yLo)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-weight="bold">%s</text>`+"\n", x0, y0-6, html.EscapeString(title))
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", x0, y0, w, h)
	// y ticks: decades on a log scale, 0/half/max on a linear one.
	var yt []float64
	if logY {
		for v := yLo; v <= yHi*1.0001; v *= 10 {
			yt = append(yt, v)
		}
	} else {
		yt = []float64{0, yHi / 2, yHi}
	}
	for _, v := range yt {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x0, x0+w, yf(v), yf(v))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-4, yf(v)+4, short(v))
	}
	for _, v := range xs {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", xf(v), y0+h+13, short(v))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x0+w/2, y0+h+27, html.EscapeString(xLabel))
	if target > 0 {
		fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#d62728" stroke-dasharray="5 4"/>`+"\n", x0, x0+w, yf(target), yf(target))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" fill="#d62728" font-size="10">%s</text>`+"\n", x0+4, yf(target)-3, html.EscapeString(targetLabel))
	}
	for i, s := range ss {
		var pts []string
		for j, v := range s.ys {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xf(xs[j]), yf(v)))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s</title></circle>`+"\n", xf(xs[j]), yf(v), s.color, html.EscapeString(fmt.Sprintf("%s at %s: %s", s.name, short(xs[j]), short(v))))
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.8"/>`+"\n", strings.Join(pts, " "), s.color)
		if len(ss) > 1 {
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="9" height="9" fill="%s"/>`+"\n", x0+6, y0+6+float64(i)*13, s.color)
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10">%s</text>`+"\n", x0+19, y0+14+float64(i)*13, html.EscapeString(s.name))
		}
	}
}

// short prints v compactly: 5000, 2.5k, 0.015.
func short(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 100 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	case v >= 0.01:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}
