// Package shapes is the shape matrix: it runs tollgate against every kind
// of server a user meets and reports, in one table, how it does on each.
//
// A [Cell] is a server shape in internal/fakecloud (a fixed window of any
// length, a sliding log, a token bucket, a cap on requests in flight, load
// shedding, an unseen consumer of the same quota, rate-limit headers or
// none) and a load (closed-loop callers, clients, round trip, a quota step
// mid-run). [Run] runs one cell from a cold start the way a user wires
// tollgate: each caller calls [retry.Do] around a fresh signed request sent
// through an [http.Client] whose Transport is a [transport.Transport], each
// call with a two-minute deadline; a call that fails at once is followed by
// a wait of what its error reports, or 100 ms. It runs in virtual time,
// inside a testing/synctest bubble with fakecloud in memory, so a 60 s
// window run for ten windows costs a fraction of a second.
//
// Every figure is counted by the server (fakecloud's Config.OnRequest) or
// the callers, never by the limiter about itself; the learner's own
// estimate is read from its Snapshot and set beside the truth. [Summarize]
// folds several seeded runs into medians, and [WriteTable] writes the
// Markdown table docs/matrix.md shows, with the goals each cell misses.
// [Series.WriteSVG] draws one run, window by window.
//
// Beyond the fixed cells: [Draw] draws a server at random from the family
// a client meets, from a seed, and [WriteFamily] writes the distribution
// of the figures over many draws and the worst of them. [RunRealtime] runs
// a cell as Run does but on the wall clock, over loopback, and
// [WriteTwins] sets [RealtimeCells] beside their virtual-time twins.
// [Compare] judges a change: it sets the per-seed figures a run saved
// ([Saved]) beside a rerun's, and says per figure better, worse or noise,
// with a family-wise false-alarm rate.
//
// The matrix runs as a test:
//
//	go test ./internal/shapes -run TestMatrix -count=1 -args -matrix
//
// rewrites the table in docs/matrix.md (between its shapes:begin and
// shapes:end marker lines) and the pictures in docs/shapes, which that
// page links as shapes/*.svg; -family N, -realtime, -save and -compare
// are its other flags (docs/matrix.md says how to use each). A plain go
// test runs a few cells, draws and one real-time cell, shortened, as a
// smoke test. Nothing here changes how tollgate behaves.
package shapes
