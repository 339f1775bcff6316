//! Reply framing on the hot path: the bounded framer the engine's reader uses now
//! (`src/transport/bounded.rs`), against what it replaced (`redis-protocol`'s `decode_bytes_mut`, then
//! the frame mapped to the reply the algorithm reads), on the same input in the same run.
//!
//! Inputs: one `+OK` (a lone lock cycle's read), and a read of 64 replies as `e2e_batch64` sees them
//! (`+OK`, `$-1`, `:1`, `:0`, `:-1` mixed). `cargo bench -p redlock-engine --bench decode`.

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use redis_protocol::resp2::decode::decode_bytes_mut;
use redis_protocol::resp2::types::BytesFrame;
use redlock_engine::__private::decode_replies;

/// The replaced path: decode each frame, then map it as the old `resp::to_result` did.
fn old_decode(buf: &mut BytesMut) -> usize {
    let mut n = 0;
    while let Ok(Some((frame, _, _))) = decode_bytes_mut(buf) {
        let kind = match frame {
            BytesFrame::SimpleString(s) if &s[..] == b"OK" => 0u8,
            BytesFrame::SimpleString(_) | BytesFrame::BulkString(_) => 1,
            BytesFrame::Integer(i) => 2 + (i > 0) as u8,
            BytesFrame::Null => 4,
            BytesFrame::Error(_) => 5,
            BytesFrame::Array(_) => 6,
        };
        std::hint::black_box(kind);
        n += 1;
    }
    n
}

fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    let mixed: [&[u8]; 5] = [b"+OK\r\n", b"$-1\r\n", b":1\r\n", b":0\r\n", b":-1\r\n"];
    let batch: Vec<u8> = (0..64).flat_map(|i| mixed[i % 5].to_vec()).collect();
    vec![("one_ok", b"+OK\r\n".to_vec()), ("batch64", batch)]
}

fn bench_decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode");
    for (name, input) in inputs() {
        let replies = decode_replies(&mut BytesMut::from(&input[..])).unwrap();
        group.throughput(Throughput::Elements(replies as u64));
        // Alternating old and new on the same input, so machine noise hits both.
        group.bench_with_input(BenchmarkId::new("redis_protocol", name), &input, |b, i| {
            b.iter(|| old_decode(&mut BytesMut::from(&i[..])))
        });
        group.bench_with_input(BenchmarkId::new("bounded", name), &input, |b, i| {
            b.iter(|| decode_replies(&mut BytesMut::from(&i[..])).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench_decode);
criterion_main!(benches);
