package server

// GET /metrics: the master's Prometheus text and the node's figures. A
// server replaces its master when its node steps down (a new generation),
// and a counter of the process never goes backwards: the cumulative
// samples of the master's text (counters; a histogram's buckets, sum and
// count; a summary's sum and count) are rendered as the retired
// generations' final values plus the current master's, and never below
// what an earlier scrape showed (a retired master's calls in flight may
// still count after its values were taken). Gauges are the current
// generation's.

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/kvcache-ai/libmooncake_meta/go/ha"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
)

// promSample is one cumulative sample of a master's text.
type promSample struct {
	family, kind string // its family's name and TYPE
	value        float64
}

// masterTotals are the cumulative samples by series (name and labels).
type masterTotals map[string]promSample

// cumulativeKind returns the family and TYPE of sample name when it is
// cumulative under types (family -> TYPE).
func cumulativeKind(name string, types map[string]string) (string, string, bool) {
	if types[name] == "counter" {
		return name, "counter", true
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suf)
		if !ok {
			continue
		}
		switch types[base] {
		case "histogram":
			return base, "histogram", true
		case "summary":
			if suf != "_bucket" {
				return base, "summary", true
			}
		}
	}
	return "", "", false
}

// promLine is a sample line split: its series (name and labels), name,
// value and what follows the value (a timestamp), ok false when it is no
// sample line or its value does not parse.
func splitSample(line string) (series, name string, value float64, rest string, ok bool) {
	if line == "" || line[0] == '#' {
		return "", "", 0, "", false
	}
	end := strings.IndexAny(line, "{ ")
	if end <= 0 {
		return "", "", 0, "", false
	}
	name = line[:end]
	if line[end] == '{' {
		// The closing brace, past quoted label values (which may hold
		// braces and escaped quotes).
		inQuote := false
		i := end + 1
		for ; i < len(line); i++ {
			c := line[i]
			if inQuote {
				if c == '\\' {
					i++
				} else if c == '"' {
					inQuote = false
				}
				continue
			}
			if c == '"' {
				inQuote = true
			} else if c == '}' {
				break
			}
		}
		if i >= len(line) {
			return "", "", 0, "", false
		}
		end = i + 1
	}
	series = line[:end]
	fields := strings.Fields(line[end:])
	if len(fields) == 0 {
		return "", "", 0, "", false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", "", 0, "", false
	}
	return series, name, v, strings.Join(fields[1:], " "), true
}

// familyOf returns the family a comment line (# HELP or # TYPE) is about,
// and the TYPE's kind for a TYPE line.
func familyOf(line string) (family, kind string, ok bool) {
	f := strings.Fields(line)
	if len(f) < 3 || f[0] != "#" || (f[1] != "HELP" && f[1] != "TYPE") {
		return "", "", false
	}
	if f[1] == "TYPE" && len(f) >= 4 {
		kind = f[3]
	}
	return f[2], kind, true
}

// parseTotals returns the cumulative samples of a Prometheus text.
func parseTotals(text string) masterTotals {
	out := make(masterTotals)
	types := make(map[string]string)
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if fam, kind, ok := familyOf(line); ok {
			if kind != "" {
				types[fam] = kind
			}
			continue
		}
		series, name, v, _, ok := splitSample(line)
		if !ok {
			continue
		}
		if fam, kind, ok := cumulativeKind(name, types); ok {
			out[series] = promSample{family: fam, kind: kind, value: v}
		}
	}
	return out
}

// formatValue writes a sample value as the master does (an integer when
// it is one).
func formatValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// carryTotals rewrites the current master's text: each cumulative sample
// becomes prev's value plus its own, at least last's (which it updates);
// a series prev has that the text lacks is added to its family's block
// (or, with its TYPE, at the end). Call it with s.mu held.
func carryTotals(text string, prev, last masterTotals) string {
	var b strings.Builder
	b.Grow(len(text) + 64*len(prev))
	types := make(map[string]string)
	emitted := make(map[string]bool)
	families := make(map[string]bool)
	cur := "" // the family whose block is being written
	flush := func(fam string) {
		if fam == "" {
			return
		}
		for series, p := range prev {
			if p.family == fam && !emitted[series] {
				v := max(p.value, last[series].value)
				last[series] = promSample{family: p.family, kind: p.kind, value: v}
				emitted[series] = true
				fmt.Fprintf(&b, "%s %s\n", series, formatValue(v))
			}
		}
	}
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if fam, kind, ok := familyOf(line); ok {
			if fam != cur {
				flush(cur)
				cur = fam
				families[fam] = true
			}
			if kind != "" {
				types[fam] = kind
			}
			b.WriteString(line)
			b.WriteByte('\n')
			continue
		}
		series, name, v, rest, ok := splitSample(line)
		fam, kind, cumulative := cumulativeKind(name, types)
		if !ok || !cumulative {
			if line != "" {
				b.WriteString(line)
				b.WriteByte('\n')
			}
			continue
		}
		v += prev[series].value
		v = max(v, last[series].value)
		last[series] = promSample{family: fam, kind: kind, value: v}
		emitted[series] = true
		b.WriteString(series)
		b.WriteByte(' ')
		b.WriteString(formatValue(v))
		if rest != "" {
			b.WriteByte(' ')
			b.WriteString(rest)
		}
		b.WriteByte('\n')
	}
	flush(cur)
	// Families the current text lacks altogether.
	missing := make(map[string]string)
	for _, p := range prev {
		if !families[p.family] {
			missing[p.family] = p.kind
		}
	}
	for fam, kind := range missing {
		fmt.Fprintf(&b, "# TYPE %s %s\n", fam, kind)
		flush(fam)
	}
	return b.String()
}

// retireTotals adds a retired master's cumulative samples to s.prevMaster
// (with s.mu held).
func (s *Server) retireTotals(text string) {
	if s.prevMaster == nil {
		s.prevMaster = make(masterTotals)
	}
	for series, p := range parseTotals(text) {
		q := s.prevMaster[series]
		s.prevMaster[series] = promSample{family: p.family, kind: p.kind, value: q.value + p.value}
	}
}

// metricsAttempts bounds how often a scrape starts over because the
// generation it read was replaced meanwhile.
const metricsAttempts = 4

// metrics writes the master's Prometheus text and the node's figures. A
// failure is the JSON error body, as every other one.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	for attempt := 1; attempt <= metricsAttempts; attempt++ {
		g := s.current()
		text, err := g.m.MetricsPrometheus()
		if err != nil {
			if s.current() != g {
				continue // replaced meanwhile: the new master's
			}
			s.fail(w, r, &requestError{status: http.StatusServiceUnavailable, name: api.ErrNameUnavailable,
				msg: "metrics unavailable: " + err.Error()})
			return
		}
		role := g.n.Role()
		applied, durable := g.n.AppliedSeq(), g.n.DurableSeq()
		snap := g.n.Snapshots()
		shipped := g.n.ShippedBytes()
		s.mu.Lock()
		if s.cur != g {
			// Replaced since: the retired counts may include g's.
			s.mu.Unlock()
			continue
		}
		text = carryTotals(text, s.prevMaster, s.lastMaster)
		restarts, prev := s.restarts, s.prevGens
		s.mu.Unlock()
		out := s.renderNode(text, role, applied, durable, restarts, prev, snap, shipped, s.throttled.Load())
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		io.WriteString(w, out)
		return
	}
	s.fail(w, r, &requestError{status: http.StatusServiceUnavailable, name: api.ErrNameUnavailable,
		msg: fmt.Sprintf("metrics unavailable: the node's master was replaced %d times during the scrape", metricsAttempts)})
}

// renderNode appends the node's figures to the master's text.
func (s *Server) renderNode(text string, role ha.Role, applied, durable, restarts uint64, prev counters,
	snap ha.SnapshotStats, shipped, throttled uint64) string {
	var b strings.Builder
	b.WriteString(text)
	if text != "" && !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString("# HELP mooncake_meta_ha_role 1 for the node's current role.\n# TYPE mooncake_meta_ha_role gauge\n")
	for _, r := range []ha.Role{ha.RoleFollower, ha.RolePromoting, ha.RoleLeader, ha.RoleStopped} {
		v := 0
		if r == role {
			v = 1
		}
		fmt.Fprintf(&b, "mooncake_meta_ha_role{role=%q} %d\n", r.String(), v)
	}
	fmt.Fprintf(&b, "# HELP mooncake_meta_ha_applied_seq The last journal sequence the master applied from etcd.\n# TYPE mooncake_meta_ha_applied_seq gauge\nmooncake_meta_ha_applied_seq %d\n", applied)
	fmt.Fprintf(&b, "# HELP mooncake_meta_ha_durable_seq The sequence up to which the leader's journal is in etcd.\n# TYPE mooncake_meta_ha_durable_seq gauge\nmooncake_meta_ha_durable_seq %d\n", durable)
	fmt.Fprintf(&b, "# HELP mooncake_meta_ha_node_restarts_total Standby masters started after a step-down.\n# TYPE mooncake_meta_ha_node_restarts_total counter\nmooncake_meta_ha_node_restarts_total %d\n", restarts)
	fmt.Fprintf(&b, "# HELP mooncake_meta_ha_snapshot_seq The journal sequence of the latest snapshot this node published or restored.\n# TYPE mooncake_meta_ha_snapshot_seq gauge\nmooncake_meta_ha_snapshot_seq %d\n", snap.Seq)
	fmt.Fprintf(&b, "# HELP mooncake_meta_ha_snapshot_bytes The size of that snapshot.\n# TYPE mooncake_meta_ha_snapshot_bytes gauge\nmooncake_meta_ha_snapshot_bytes %d\n", snap.Bytes)
	fmt.Fprintf(&b, "# HELP mooncake_meta_ha_snapshots_total Snapshots this server published.\n# TYPE mooncake_meta_ha_snapshots_total counter\nmooncake_meta_ha_snapshots_total %d\n", prev.snapshots+snap.Published)
	fmt.Fprintf(&b, "# HELP mooncake_meta_ha_snapshot_load_failures_total Snapshots this server could not load (unreadable, checksum mismatch, refused).\n# TYPE mooncake_meta_ha_snapshot_load_failures_total counter\nmooncake_meta_ha_snapshot_load_failures_total %d\n", prev.loadFailures+snap.LoadFailures)
	fmt.Fprintf(&b, "# HELP mooncake_meta_ha_journal_gc_seq The sequence up to which this node, leading, deleted the journal from etcd.\n# TYPE mooncake_meta_ha_journal_gc_seq gauge\nmooncake_meta_ha_journal_gc_seq %d\n", snap.GCSeq)
	fmt.Fprintf(&b, "# HELP mooncake_meta_ha_journal_shipped_bytes_total Journal bytes this server stored in etcd while leading.\n# TYPE mooncake_meta_ha_journal_shipped_bytes_total counter\nmooncake_meta_ha_journal_shipped_bytes_total %d\n", prev.shipped+shipped)
	fmt.Fprintf(&b, "# HELP mooncake_meta_ha_requests_throttled_total Heavy calls answered 429 TOO_MANY_REQUESTS (--max-heavy-requests, --max-snapshot-requests).\n# TYPE mooncake_meta_ha_requests_throttled_total counter\nmooncake_meta_ha_requests_throttled_total %d\n", throttled)
	return b.String()
}
