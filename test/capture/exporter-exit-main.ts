// A producer that enqueues rows and lets its process end without closing the exporter (store.test.ts):
// the exporter sends what it queued before the process exits, as the reference's atexit shutdown does.
import { CaptureExporter } from '../../src/capture/exporter.js';
import { StoreHttpSink } from '../../src/capture/http-sink.js';

const exporter = new CaptureExporter(new StoreHttpSink(process.argv[2]), { flushIntervalMs: 60_000 });
for (let seq = 0; seq < 5; seq++) exporter.enqueue({ type: 'wire_row', row: { run_id: 'exit', sampling_session_id: 'exit', seq_id: seq, sample_idx: 0 } });
