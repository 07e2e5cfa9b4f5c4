package server

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	mm "github.com/kvcache-ai/libmooncake_meta/go"
	"github.com/kvcache-ai/libmooncake_meta/go/ha/server/api"
)

// /metrics whose master is closed (a server stopping) answers the JSON
// error body, as every other failure, not plain text.
func TestMetricsOfAClosedMasterAnswerTheJSONErrorBody(t *testing.T) {
	m, err := mm.New()
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	s := &Server{log: slog.New(slog.DiscardHandler), cur: &generation{m: m}, lastMaster: make(masterTotals)}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, api.PathMetrics, nil))
	var e api.Error
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != http.StatusServiceUnavailable ||
		w.Header().Get("Content-Type") != "application/json" || e.Name != api.ErrNameUnavailable || !strings.Contains(e.Message, "closed") {
		t.Fatalf("GET /metrics of a closed master: HTTP %d %q %q (%v), want 503 %s in JSON",
			w.Code, w.Header().Get("Content-Type"), w.Body.String(), err, api.ErrNameUnavailable)
	}
}

const genText = `# HELP master_key_count Objects stored.
# TYPE master_key_count gauge
master_key_count 7
# HELP master_puts_total Puts.
# TYPE master_puts_total counter
master_puts_total 5
# HELP master_by_segment_total Per segment.
# TYPE master_by_segment_total counter
master_by_segment_total{segment="a b}\"c"} 2
# HELP master_latency_seconds Latency.
# TYPE master_latency_seconds histogram
master_latency_seconds_bucket{le="1"} 3
master_latency_seconds_bucket{le="+Inf"} 4
master_latency_seconds_sum 2.5
master_latency_seconds_count 4
# HELP master_ratio A summary.
# TYPE master_ratio summary
master_ratio{quantile="0.5"} 0.25
master_ratio_sum 1.5
master_ratio_count 6
`

// The retired generations' cumulative samples are added to the current
// master's (counters, histogram buckets, sums and counts, summary sums
// and counts; gauges and quantiles are the current master's), a series
// the current text lacks is kept, and a sample never shows less than an
// earlier scrape did.
func TestCarryTotalsAddsTheRetiredCountsAndNeverGoesBackwards(t *testing.T) {
	s := &Server{lastMaster: make(masterTotals)}
	s.retireTotals(genText)
	s.retireTotals(genText)
	cur := strings.ReplaceAll(genText, "master_by_segment_total{segment=\"a b}\\\"c\"} 2\n", "")
	cur = strings.ReplaceAll(cur, "master_puts_total 5", "master_puts_total 1")
	got := carryTotals(cur, s.prevMaster, s.lastMaster)
	for _, want := range []string{
		"master_key_count 7\n", "master_puts_total 11\n",
		"# TYPE master_by_segment_total counter\nmaster_by_segment_total{segment=\"a b}\\\"c\"} 4\n",
		"master_latency_seconds_bucket{le=\"1\"} 9\n", "master_latency_seconds_bucket{le=\"+Inf\"} 12\n",
		"master_latency_seconds_sum 7.5\n", "master_latency_seconds_count 12\n",
		"master_ratio{quantile=\"0.5\"} 0.25\n", "master_ratio_sum 4.5\n", "master_ratio_count 18\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("carried text lacks %q:\n%s", want, got)
		}
	}
	// A scrape that read a retired master's count past what was carried
	// (a call still on it) is never undone.
	s.lastMaster["master_puts_total"] = promSample{family: "master_puts_total", kind: "counter", value: 20}
	if got := carryTotals(cur, s.prevMaster, s.lastMaster); !strings.Contains(got, "master_puts_total 20\n") {
		t.Errorf("a sample went below an earlier scrape's:\n%s", got)
	}
	// A family the current text lacks altogether is added with its TYPE.
	got = carryTotals("", s.prevMaster, s.lastMaster)
	if !strings.Contains(got, "# TYPE master_puts_total counter\nmaster_puts_total 20\n") {
		t.Errorf("a family the current text lacks is not carried:\n%s", got)
	}
}
