//! Property test: random sequences of pushes and pops of random sizes, on
//! rings of several capacities, agree with a `VecDeque` model on order,
//! content and exactly when the ring is full, counting the space the
//! consumer has taken but not yet published (its batched `head`, published
//! once a batch is taken or when it finds the ring empty).

use std::collections::VecDeque;

use proptest::prelude::*;
use vgpu_transport::shm_ring::{RECORD_HEADER, RELEASE_BATCH};
use vgpu_transport::{Ring, TransportError};

#[derive(Clone, Debug)]
enum Op {
    /// Push a message of `len` bytes (seeded with `seed`), given in `cut`
    /// positions' worth of parts.
    Push {
        len: usize,
        seed: u8,
        cut: usize,
    },
    Pop,
}

fn op(max_len: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..=max_len, any::<u8>(), 0..=max_len).prop_map(|(len, seed, cut)| Op::Push { len, seed, cut }),
        2 => Just(Op::Pop),
    ]
}

/// Records are whole 64-byte cache lines: header and payload, rounded up.
fn record_len(len: usize) -> usize {
    (RECORD_HEADER + len).div_ceil(64) * 64
}

fn run(cap: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let (ring, fd) = Ring::create(cap).expect("create");
    let p = ring.into_producer().expect("producer");
    let c = Ring::map(&fd)
        .expect("map")
        .into_consumer()
        .expect("consumer");
    let mut model: VecDeque<Vec<u8>> = VecDeque::new();
    // Byte counters: the producer's tail; the consumer's head and the head
    // it last published (once a batch is taken, or when it finds the ring
    // empty).
    let (mut tail, mut head, mut published) = (0, 0, 0);
    let mut buf = Vec::new();
    for op in ops {
        match *op {
            Op::Push { len, seed, cut } => {
                let msg: Vec<u8> = (0..len)
                    .map(|i| seed.wrapping_add(i.to_le_bytes()[0]))
                    .collect();
                let cut = cut.min(len);
                let r = p.try_push(&[&msg[..cut], &msg[cut..]]);
                if len > cap - RECORD_HEADER {
                    let too_large = matches!(r, Err(TransportError::TooLarge { .. }));
                    prop_assert!(too_large, "expected TooLarge, got {:?}", r);
                    continue;
                }
                let fits = cap - (tail - published) >= record_len(len);
                prop_assert_eq!(r.expect("push"), fits);
                if fits {
                    tail += record_len(len);
                    model.push_back(msg);
                }
            }
            Op::Pop => {
                let got = c.try_pop_into(&mut buf).expect("pop");
                match model.pop_front() {
                    Some(want) => {
                        prop_assert!(got);
                        prop_assert_eq!(&buf, &want);
                        head += record_len(want.len());
                        if (head - published) as u64 >= cap as u64 / RELEASE_BATCH {
                            published = head;
                        }
                    }
                    None => {
                        prop_assert!(!got);
                        published = head;
                    }
                }
            }
        }
    }
    // Drain: everything left comes out in order.
    while let Some(want) = model.pop_front() {
        prop_assert!(c.try_pop_into(&mut buf).expect("pop"));
        prop_assert_eq!(&buf, &want);
    }
    prop_assert!(!c.try_pop_into(&mut buf).expect("empty"));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn fifo_matches_model_small_rings(cap_log in 6u32..=8, ops in prop::collection::vec(op(260), 1..400)) {
        run(1 << cap_log, &ops)?;
    }

    #[test]
    fn fifo_matches_model_page_ring(ops in prop::collection::vec(op(1500), 1..300)) {
        run(4096, &ops)?;
    }
}
