// franz-go peer for the e2e benchmark (contract: bench/peers/README.md).
//
// produce: kgo.Client.Produce with a promise per record (acks counted in the
// promise); transactions via BeginTransaction / Flush / EndTransaction every
// --txn-records records. consume: PollFetches over ConsumePartitions (assign),
// or --members M clients (goroutines) in a consumer group (--group), each
// committing on revocation and at the end. Prints one JSON
// result line on stdout; diagnostics go to stderr.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type args struct {
	op  string
	kv  map[string]string
	set map[string]string
}

func parseArgs() (*args, error) {
	if len(os.Args) < 2 {
		return nil, fmt.Errorf("usage: e2e-peer-franz-go produce|consume|version [--key value]...")
	}
	a := &args{op: os.Args[1], kv: map[string]string{}, set: map[string]string{}}
	rest := os.Args[2:]
	for i := 0; i < len(rest); i += 2 {
		k, ok := strings.CutPrefix(rest[i], "--")
		if !ok || i+1 >= len(rest) {
			return nil, fmt.Errorf("bad argument %q", rest[i])
		}
		v := rest[i+1]
		if k == "set" {
			sk, sv, ok := strings.Cut(v, "=")
			if !ok {
				return nil, fmt.Errorf("--set %s: expected key=value", v)
			}
			a.set[sk] = sv
		} else {
			a.kv[k] = v
		}
	}
	return a, nil
}

func (a *args) str(k, def string) string {
	if v, ok := a.kv[k]; ok {
		return v
	}
	return def
}

func (a *args) num(k string, def int64) int64 {
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		fail(fmt.Errorf("--%s %s: not a number", k, v))
	}
	return n
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "e2e-peer-franz-go:", err)
	os.Exit(1)
}

func version() string {
	v := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/twmb/franz-go" {
				v = d.Version
			}
		}
	}
	return "franz-go " + v
}

func main() {
	a, err := parseArgs()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e-peer-franz-go:", err)
		os.Exit(2)
	}
	var out map[string]any
	switch a.op {
	case "version":
		fmt.Println(version())
		return
	case "produce":
		out, err = produce(a)
	case "consume":
		out, err = consume(a)
	default:
		err = fmt.Errorf("unknown op %s", a.op)
	}
	if err != nil {
		fail(err)
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
}

func readPayloads(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pool [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(l) > 0 {
			pool = append(pool, l)
		}
	}
	if len(pool) == 0 {
		return nil, fmt.Errorf("%s: no payload lines", path)
	}
	return pool, nil
}

// Java's percentile rule (ProducerPerformance): the value at index floor(q*n).
func percentiles(v []float64) any {
	if len(v) == 0 {
		return nil
	}
	sort.Float64s(v)
	at := func(q float64) float64 {
		i := int(q * float64(len(v)))
		if i >= len(v) {
			i = len(v) - 1
		}
		return v[i]
	}
	return map[string]any{"n": len(v), "p50": at(0.5), "p99": at(0.99), "p999": at(0.999), "max": v[len(v)-1]}
}

func produce(a *args) (map[string]any, error) {
	topic := a.str("topic", "")
	n := a.num("records", -1)
	if topic == "" || n < 0 {
		return nil, fmt.Errorf("--topic and --records are required")
	}
	pool, err := readPayloads(a.str("payload-file", ""))
	if err != nil {
		return nil, err
	}
	rate := a.num("rate", 0)
	txnID := a.str("transactional-id", "")
	txnRecords := a.num("txn-records", 10000)
	warmup := a.num("warmup-records", n/10)
	if warmup < 1 {
		warmup = 1
	}
	var codec kgo.CompressionCodec
	switch c := a.str("compression", "none"); c {
	case "none":
		codec = kgo.NoCompression()
	case "lz4":
		codec = kgo.Lz4Compression()
	case "zstd":
		codec = kgo.ZstdCompression()
	case "snappy":
		codec = kgo.SnappyCompression()
	case "gzip":
		codec = kgo.GzipCompression()
	default:
		return nil, fmt.Errorf("unknown compression %s", c)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(a.str("bootstrap", "127.0.0.1:9092"), ",")...),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(time.Duration(a.num("linger-ms", 5)) * time.Millisecond),
		kgo.ProducerBatchMaxBytes(int32(a.num("batch-bytes", 1000000))),
		kgo.ProducerBatchCompression(codec),
		kgo.MaxBufferedRecords(1000000),
		kgo.MaxBufferedBytes(int(a.num("buffer-bytes", 134217728))),
	}
	if a.str("idempotent", "true") == "false" {
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5))
	}
	if txnID != "" {
		opts = append(opts, kgo.TransactionalID(txnID))
	}
	if len(a.set) > 0 {
		return nil, fmt.Errorf("--set is not supported by this peer")
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()

	var acked, errs, byteCount, firstNs, warmNs, lastNs atomic.Int64
	var firstErr atomic.Value
	var partMu sync.Mutex
	partCount := map[int32]int64{}
	partLast := map[int32]int64{}
	var latMu sync.Mutex
	var lat []float64
	ctx := context.Background()
	start := time.Now()
	promise := func(r *kgo.Record, err error) {
		now := time.Since(start).Nanoseconds()
		if err != nil {
			errs.Add(1)
			firstErr.CompareAndSwap(nil, err.Error())
			return
		}
		c := acked.Add(1)
		byteCount.Add(int64(len(r.Value)))
		if c == 1 {
			firstNs.Store(now)
		}
		if c == warmup {
			warmNs.Store(now)
		}
		lastNs.Store(now)
		partMu.Lock()
		partCount[r.Partition]++
		if r.Offset > partLast[r.Partition] || partCount[r.Partition] == 1 {
			partLast[r.Partition] = r.Offset
		}
		partMu.Unlock()
		if rate > 0 {
			latMu.Lock()
			lat = append(lat, float64(now-r.Context.Value(sentKey{}).(int64))/1e6)
			latMu.Unlock()
		}
	}
	txns := 0
	inTxn := int64(0)
	// Commit latency: Flush + EndTransaction, per transaction.
	var commitMs []float64
	for i := int64(0); i < n; i++ {
		if txnID != "" && inTxn == 0 {
			if err := cl.BeginTransaction(); err != nil {
				return nil, fmt.Errorf("begin transaction: %w", err)
			}
		}
		r := &kgo.Record{Value: pool[i%int64(len(pool))]}
		if rate > 0 {
			due := time.Duration(float64(i) / float64(rate) * 1e9)
			if d := due - time.Since(start); d > 0 {
				time.Sleep(d)
			}
			r.Context = context.WithValue(ctx, sentKey{}, time.Since(start).Nanoseconds())
		}
		cl.Produce(ctx, r, promise)
		inTxn++
		if txnID != "" && (inTxn == txnRecords || i+1 == n) {
			t0 := time.Now()
			if err := cl.Flush(ctx); err != nil {
				return nil, fmt.Errorf("flush: %w", err)
			}
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				return nil, fmt.Errorf("commit: %w", err)
			}
			commitMs = append(commitMs, float64(time.Since(t0).Nanoseconds())/1e6)
			txns++
			inTxn = 0
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, fmt.Errorf("flush: %w", err)
	}
	last := float64(lastNs.Load()) / 1e9
	warm := float64(warmNs.Load()) / 1e9
	steady := 0.0
	if acked.Load() > warmup && last > warm {
		steady = float64(acked.Load()-warmup) / (last - warm)
	}
	var parts []map[string]any
	for p, c := range partCount {
		parts = append(parts, map[string]any{"p": p, "count": c, "last": partLast[p]})
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i]["p"].(int32) < parts[j]["p"].(int32) })
	e, _ := firstErr.Load().(string)
	latMu.Lock()
	var latOut any
	if rate > 0 {
		latOut = percentiles(lat)
	}
	latMu.Unlock()
	var commitOut any
	if txnID != "" {
		commitOut = percentiles(commitMs)
	}
	return map[string]any{
		"peer": "franz-go", "version": version(), "op": "produce",
		"records": acked.Load(), "bytes": byteCount.Load(), "errors": errs.Load(),
		"elapsed_s": last, "first_s": float64(firstNs.Load()) / 1e9, "steady_rps": steady,
		"txns": txns, "lat_ms": latOut, "commit_ms": commitOut, "partitions": parts, "error": e,
	}, nil
}

type sentKey struct{}

// member is one consumer of a consume run and what it read: per partition, the
// runs of consecutive offsets, as {first, last}.
type member struct {
	cl                 *kgo.Client
	runs               map[int32][][2]int64
	count, nbytes, bad int64
	firstS, lastS      float64
	seen               bool
	mu                 sync.Mutex // errs and firstErr: callbacks run on the client's goroutines
	errs               int64
	firstErr           string
}

func (m *member) fail(err string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errs++
	if m.firstErr == "" {
		m.firstErr = err
	}
}

// shared is what the members of one run share: the stop condition and the idle clock.
type shared struct {
	want     int64
	start    time.Time
	total    atomic.Int64
	lastSeen atomic.Int64 // nanoseconds from start to the latest record any member saw
	idle     time.Duration
}

func (m *member) take(fs kgo.Fetches, valueBytes int64, sh *shared) {
	n := fs.NumRecords()
	if n == 0 {
		return
	}
	now := time.Since(sh.start)
	if !m.seen {
		m.seen = true
		m.firstS = now.Seconds()
	}
	m.lastS = now.Seconds()
	for {
		old := sh.lastSeen.Load()
		if int64(now) <= old || sh.lastSeen.CompareAndSwap(old, int64(now)) {
			break
		}
	}
	fs.EachRecord(func(r *kgo.Record) {
		m.nbytes += int64(len(r.Value))
		if valueBytes > 0 && int64(len(r.Value)) != valueBytes {
			m.bad++
		}
		runs := m.runs[r.Partition]
		if k := len(runs); k > 0 && runs[k-1][1]+1 == r.Offset {
			runs[k-1][1] = r.Offset
		} else {
			m.runs[r.Partition] = append(runs, [2]int64{r.Offset, r.Offset})
		}
	})
	m.count += int64(n)
	sh.total.Add(int64(n))
}

// poll is one PollFetches of up to 100 ms; its own deadline is not an error.
func (m *member) poll(valueBytes int64, sh *shared) int {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	fs := m.cl.PollFetches(ctx)
	cancel()
	fs.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		m.fail(fmt.Sprintf("%s/%d: %v", t, p, err))
	})
	m.take(fs, valueBytes, sh)
	return fs.NumRecords()
}

// run polls until the members together have the records (or none came for too
// long); in a group it then commits (polling through a rebalance in the way) and
// waits for the others before closing.
func (m *member) run(group bool, valueBytes int64, sh *shared, committed *sync.WaitGroup) {
	for sh.total.Load() < sh.want {
		got := m.poll(valueBytes, sh)
		m.cl.AllowRebalance()
		if got == 0 && time.Since(sh.start)-time.Duration(sh.lastSeen.Load()) > sh.idle {
			m.fail(fmt.Sprintf("no record for %v after %d records", sh.idle, sh.total.Load()))
			break
		}
		m.mu.Lock()
		errs := m.errs
		m.mu.Unlock()
		if errs > 1000 {
			break
		}
	}
	if group {
		deadline := time.Now().Add(30 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := m.cl.CommitUncommittedOffsets(ctx)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				m.fail("commit: " + err.Error())
				break
			}
			// Records now would be duplicates, and are counted as such.
			m.poll(valueBytes, sh)
			m.cl.AllowRebalance()
		}
	}
	// Every member has committed before any leaves.
	committed.Done()
	committed.Wait()
	m.cl.Close()
}

func consume(a *args) (map[string]any, error) {
	topic := a.str("topic", "")
	n := a.num("records", -1)
	partitions := a.num("partitions", -1)
	if topic == "" || n < 0 {
		return nil, fmt.Errorf("--topic and --records are required")
	}
	valueBytes := a.num("value-bytes", 0)
	idle := time.Duration(a.num("idle-timeout-s", 30)) * time.Second
	group := a.str("group", "")
	members := a.num("members", 1)
	if members < 1 || (group == "" && members != 1) {
		return nil, fmt.Errorf("--members needs --group and must be at least 1")
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(a.str("bootstrap", "127.0.0.1:9092"), ",")...),
		kgo.FetchMinBytes(1),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.FetchMaxPartitionBytes(1048576),
		kgo.FetchMaxBytes(52428800),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if a.str("isolation", "read_uncommitted") == "read_committed" {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	for k, v := range a.set {
		switch {
		case k == "group.protocol" && v == "consumer":
			// KIP-848: the coordinator assigns; kgo opts in with a server-side balancer
			// and needs range or sticky first (sticky asks for the broker's "uniform").
			opts = append(opts, kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer())
		case k == "group.protocol" && v == "classic":
		default:
			return nil, fmt.Errorf("--set %s=%s is not supported by this peer (only group.protocol)", k, v)
		}
	}
	if group == "" {
		if partitions < 1 {
			return nil, fmt.Errorf("--partitions is required without --group")
		}
		m := map[int32]kgo.Offset{}
		for p := int32(0); p < int32(partitions); p++ {
			m[p] = kgo.NewOffset().AtStart()
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: m}))
	}
	sh := &shared{want: n, start: time.Now(), idle: idle}
	all := make([]*member, members)
	for i := range all {
		m := &member{runs: map[int32][][2]int64{}}
		o := opts
		if group != "" {
			o = append(append([]kgo.Opt{}, opts...),
				kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
				// Polls and rebalances take turns (AllowRebalance after each poll), so a
				// revocation's commit covers exactly what this member took.
				kgo.BlockRebalanceOnPoll(),
				kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
					if len(revoked) == 0 {
						return
					}
					if err := cl.CommitUncommittedOffsets(ctx); err != nil {
						m.fail("commit on revoke: " + err.Error())
					}
				}),
				kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
					if len(lost) > 0 {
						m.fail(fmt.Sprintf("partitions lost: %v", lost))
					}
				}),
			)
		}
		cl, err := kgo.NewClient(o...)
		if err != nil {
			return nil, err
		}
		m.cl = cl
		all[i] = m
	}
	var committed, finished sync.WaitGroup
	committed.Add(len(all))
	finished.Add(len(all))
	for _, m := range all {
		go func(m *member) {
			defer finished.Done()
			m.run(group != "", valueBytes, sh, &committed)
		}(m)
	}
	finished.Wait()

	var count, nbytes, errs, bad int64
	firstS, lastS := -1.0, 0.0
	firstErr := ""
	runs := map[int32][][2]int64{}
	perMember := make([]int64, 0, len(all))
	for _, m := range all {
		perMember = append(perMember, m.count)
		count += m.count
		nbytes += m.nbytes
		errs += m.errs
		bad += m.bad
		if firstErr == "" {
			firstErr = m.firstErr
		}
		if m.seen {
			if firstS < 0 || m.firstS < firstS {
				firstS = m.firstS
			}
			if m.lastS > lastS {
				lastS = m.lastS
			}
		}
		for p, r := range m.runs {
			runs[p] = append(runs[p], r...)
		}
	}
	if firstS < 0 {
		firstS = 0
	}
	steady := 0.0
	if count > 1 && lastS > firstS {
		steady = float64(count-1) / (lastS - firstS)
	}
	var plist []map[string]any
	for p, rs := range runs {
		var c, first, last int64 = 0, -1, -1
		for _, r := range rs {
			c += r[1] - r[0] + 1
			if first < 0 || r[0] < first {
				first = r[0]
			}
			if r[1] > last {
				last = r[1]
			}
		}
		plist = append(plist, map[string]any{"p": p, "count": c, "first": first, "last": last, "runs": rs})
	}
	sort.Slice(plist, func(i, j int) bool { return plist[i]["p"].(int32) < plist[j]["p"].(int32) })
	return map[string]any{
		"peer": "franz-go", "version": version(), "op": "consume",
		"records": count, "bytes": nbytes, "errors": errs,
		"elapsed_s": lastS, "first_s": firstS, "steady_rps": steady,
		"bad_values": bad, "member_records": perMember, "partitions": plist, "error": firstErr,
	}, nil
}
