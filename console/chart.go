package console

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// chart is a line chart drawn as SVG by the template: no JavaScript, no
// library. Coordinates are in the SVG's own units (viewBox 0 0 W H).
type chart struct {
	ID    string
	Title string
	// Desc says in words what the chart shows (for screen readers and for
	// anyone who would rather read).
	Desc   string
	W, H   int
	Left   int
	Top    int
	Right  int
	Bottom int
	// Lines are polyline point lists, one per stretch without a gap.
	Lines  []string
	YTicks []tick
	XTicks []tick
	Empty  bool
}

type tick struct {
	Pos   float64
	Label string
}

const (
	chartW, chartH = 640, 220
	chartLeft      = 56
	chartRight     = 12
	chartTop       = 12
	chartBottom    = 28
)

// historyCharts draws the lag and open-findings charts of the window that
// ends at now.
func historyCharts(samples []Sample, now time.Time) (lag, open chart) {
	start := now.Add(-historyWindow)
	var lagPts, openPts []point
	for _, s := range samples {
		if s.LagKnown {
			lagPts = append(lagPts, point{s.At, s.Lag.Seconds()})
		}
		openPts = append(openPts, point{s.At, float64(s.OpenFindings)})
	}
	lagUnit, lagDiv := durationUnit(maxOf(lagPts))
	lag = drawChart("lag-chart", "Reconciliation lag, last 7 days", lagPts, start, now, lagDiv,
		func(v float64) string { return trimFloat(v) + " " + lagUnit })
	open = drawChart("open-chart", "Open findings, last 7 days", openPts, start, now, 1,
		func(v float64) string { return trimFloat(v) })
	lag.Desc = describe(lagPts, func(v float64) string { return formatDuration(time.Duration(v * float64(time.Second))) }, "reconciliation lag")
	open.Desc = describe(openPts, func(v float64) string { return fmt.Sprintf("%.0f", v) }, "open findings")
	return lag, open
}

type point struct {
	at time.Time
	v  float64
}

func maxOf(ps []point) float64 {
	m := 0.0
	for _, p := range ps {
		m = math.Max(m, p.v)
	}
	return m
}

// durationUnit picks the unit the lag axis is labelled in.
func durationUnit(maxSeconds float64) (string, float64) {
	switch {
	case maxSeconds >= 2*86400:
		return "d", 86400
	case maxSeconds >= 2*3600:
		return "h", 3600
	case maxSeconds >= 120:
		return "min", 60
	}
	return "s", 1
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	return strings.TrimSuffix(s, ".0")
}

func drawChart(id, title string, pts []point, start, end time.Time, div float64, label func(float64) string) chart {
	c := chart{ID: id, Title: title, W: chartW, H: chartH, Left: chartLeft, Right: chartW - chartRight,
		Top: chartTop, Bottom: chartH - chartBottom, Empty: len(pts) == 0}
	top := niceCeil(maxOf(pts) / div)
	plotW := float64(c.Right - c.Left)
	plotH := float64(c.Bottom - c.Top)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		c.YTicks = append(c.YTicks, tick{Pos: float64(c.Bottom) - plotH*float64(i)/4, Label: label(v)})
	}
	span := end.Sub(start).Seconds()
	for d := 0; d <= 7; d++ {
		at := start.Add(time.Duration(d) * 24 * time.Hour)
		c.XTicks = append(c.XTicks, tick{Pos: float64(c.Left) + plotW*at.Sub(start).Seconds()/span, Label: at.UTC().Format("Jan 2")})
	}
	var cur []string
	var prev time.Time
	for _, p := range pts {
		if !prev.IsZero() && p.at.Sub(prev) > 2*historyBucket && len(cur) > 0 {
			c.Lines = append(c.Lines, strings.Join(cur, " "))
			cur = nil
		}
		x := float64(c.Left) + plotW*math.Max(0, p.at.Sub(start).Seconds())/span
		y := float64(c.Bottom) - plotH*(p.v/div)/top
		cur = append(cur, fmt.Sprintf("%.1f,%.1f", x, y))
		prev = p.at
	}
	if len(cur) == 1 { // a single point: draw it as a short flat line
		cur = append(cur, cur[0])
	}
	if len(cur) > 0 {
		c.Lines = append(c.Lines, strings.Join(cur, " "))
	}
	return c
}

// describe summarises a series in a sentence.
func describe(pts []point, f func(float64) string, what string) string {
	if len(pts) == 0 {
		return "No samples of " + what + " in the last 7 days yet: the service samples once a minute."
	}
	lo, hi := pts[0].v, pts[0].v
	for _, p := range pts {
		lo, hi = math.Min(lo, p.v), math.Max(hi, p.v)
	}
	return fmt.Sprintf("Over the last 7 days %s ranged from %s to %s; latest %s.", what, f(lo), f(hi), f(pts[len(pts)-1].v))
}
