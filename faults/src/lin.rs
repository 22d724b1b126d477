//! A linearizability checker: Wing & Gong's search with Lowe's memoisation (the
//! algorithm of Knossos' `wgl` and of Porcupine, without P-compositionality: callers
//! split histories per key themselves).
//!
//! Why not a crate: `todc-utils` (the one maintained-looking WGL crate) has had no release
//! since 2023 and takes histories without times or unknown outcomes; stateright's
//! `LinearizabilityTester` is tied to its actor model checker and searches without
//! memoisation. The algorithm fits in a page, and its tests below pin it on histories
//! that must pass and histories that must fail.
//!
//! An operation with an unknown outcome (`Info`) is given an infinite completion time
//! and no output: it may take effect at any point after its invocation, or (placed
//! last) never be observed, as Jepsen treats crashed operations.

use std::collections::HashSet;
use std::fmt::Debug;
use std::hash::Hash;

use crate::history::Micros;

/// A sequential specification.
pub trait Model {
    /// The object's state; hashed for the memo.
    type State: Clone + Eq + Hash + Debug;
    /// What an operation asks.
    type Input: Debug;
    /// What it returned.
    type Output: Debug;

    /// The state before any operation.
    fn init(&self) -> Self::State;

    /// Applies `input` to `state`; `output` is what the operation returned, `None` if
    /// unknown. `None` means the operation cannot have returned that from this state.
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: Option<&Self::Output>,
    ) -> Option<Self::State>;
}

/// One operation as the checker sees it.
#[derive(Debug, Clone)]
pub struct Entry<I, O> {
    /// Invocation time.
    pub invoke: Micros,
    /// Completion time; `None` when the outcome is unknown.
    pub complete: Option<Micros>,
    /// What was asked.
    pub input: I,
    /// What came back; `None` when the outcome is unknown.
    pub output: Option<O>,
}

/// The checker's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Some order of the operations, consistent with real time, satisfies the model.
    Linearizable,
    /// None does. `stuck` is the operation that could not be placed at the deepest point
    /// of the search; `prefix` the longest linearization found before it.
    NotLinearizable {
        /// Index of the operation the search could not get past.
        stuck: usize,
        /// Indices of the longest partial linearization, in order.
        prefix: Vec<usize>,
    },
    /// The search took more than its budget of steps.
    Unknown,
}

/// A fixed-size set of operation indices, hashable for the memo.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Self {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }
}

const NIL: usize = usize::MAX;

/// Checks `ops` against `model`, giving up after `budget` search steps.
pub fn check<M: Model>(model: &M, ops: &[Entry<M::Input, M::Output>], budget: usize) -> Verdict {
    let n = ops.len();
    // Events: a call and a return per operation, in time order; at equal times calls
    // come first, which treats the two operations as concurrent (the lenient choice).
    let mut events: Vec<(Micros, u8, usize)> = Vec::with_capacity(2 * n);
    for (i, op) in ops.iter().enumerate() {
        events.push((op.invoke, 0, i));
        events.push((op.complete.unwrap_or(Micros::MAX), 1, i));
    }
    events.sort_unstable();
    // A doubly linked list of the events, node 0 the head; nodes are lifted out as their
    // operation is linearized and put back (in reverse order) on backtracking.
    let len = events.len() + 1;
    let mut next = vec![NIL; len];
    let mut prev = vec![NIL; len];
    let mut op_of = vec![0; len];
    let mut is_call = vec![false; len];
    let mut call_node = vec![0; n];
    let mut ret_node = vec![0; n];
    for (k, &(_, kind, i)) in events.iter().enumerate() {
        let node = k + 1;
        prev[node] = k;
        next[k] = node;
        op_of[node] = i;
        is_call[node] = kind == 0;
        if kind == 0 {
            call_node[i] = node;
        } else {
            ret_node[i] = node;
        }
    }
    let lift = |next: &mut [usize], prev: &mut [usize], op: usize| {
        for node in [call_node[op], ret_node[op]] {
            next[prev[node]] = next[node];
            if next[node] != NIL {
                prev[next[node]] = prev[node];
            }
        }
    };
    let unlift = |next: &mut [usize], prev: &mut [usize], op: usize| {
        for node in [ret_node[op], call_node[op]] {
            next[prev[node]] = node;
            if next[node] != NIL {
                prev[next[node]] = node;
            }
        }
    };

    let mut state = model.init();
    let mut linearized = Bits::new(n);
    let mut memo: HashSet<(Bits, M::State)> = HashSet::new();
    let mut stack: Vec<(usize, M::State)> = Vec::new();
    let mut deepest: (Vec<usize>, usize) = (Vec::new(), 0);
    let mut cur = next[0];
    let mut steps = 0usize;
    while next[0] != NIL {
        steps += 1;
        if steps > budget {
            return Verdict::Unknown;
        }
        let op = op_of[cur];
        if is_call[cur] {
            let entry = &ops[op];
            if let Some(after) = model.step(&state, &entry.input, entry.output.as_ref()) {
                linearized.set(op);
                if memo.insert((linearized.clone(), after.clone())) {
                    stack.push((op, std::mem::replace(&mut state, after)));
                    lift(&mut next, &mut prev, op);
                    cur = next[0];
                    continue;
                }
                linearized.clear(op);
            }
            cur = next[cur];
        } else {
            // The return of an operation not yet placed: everything placed since the
            // last choice point must be undone.
            if stack.len() >= deepest.0.len() {
                deepest = (stack.iter().map(|(op, _)| *op).collect(), op);
            }
            let Some((undone, before)) = stack.pop() else {
                return Verdict::NotLinearizable {
                    stuck: deepest.1,
                    prefix: deepest.0,
                };
            };
            state = before;
            linearized.clear(undone);
            unlift(&mut next, &mut prev, undone);
            cur = next[call_node[undone]];
        }
    }
    Verdict::Linearizable
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain read/write register holding an integer, 0 at first.
    struct Register;

    #[derive(Debug, Clone, Copy)]
    enum Op {
        Read,
        Write(i64),
    }

    impl Model for Register {
        type State = i64;
        type Input = Op;
        type Output = i64;
        fn init(&self) -> i64 {
            0
        }
        fn step(&self, state: &i64, input: &Op, output: Option<&i64>) -> Option<i64> {
            match (input, output) {
                (Op::Read, Some(v)) => (v == state).then_some(*state),
                (Op::Read, None) => Some(*state),
                (Op::Write(v), _) => Some(*v),
            }
        }
    }

    fn op(invoke: u64, complete: Option<u64>, input: Op, output: Option<i64>) -> Entry<Op, i64> {
        Entry {
            invoke,
            complete,
            input,
            output,
        }
    }

    fn run(ops: &[Entry<Op, i64>]) -> Verdict {
        check(&Register, ops, 1_000_000)
    }

    #[test]
    fn sequential_history_passes() {
        let ops = [
            op(0, Some(10), Op::Write(1), Some(1)),
            op(20, Some(30), Op::Read, Some(1)),
            op(40, Some(50), Op::Write(2), Some(2)),
            op(60, Some(70), Op::Read, Some(2)),
        ];
        assert_eq!(run(&ops), Verdict::Linearizable);
    }

    #[test]
    fn concurrent_read_may_see_either_value() {
        for seen in [0, 1] {
            let ops = [
                op(0, Some(100), Op::Write(1), Some(1)),
                op(10, Some(20), Op::Read, Some(seen)),
            ];
            assert_eq!(run(&ops), Verdict::Linearizable, "read {seen}");
        }
    }

    #[test]
    fn stale_read_after_a_completed_write_fails() {
        let ops = [
            op(0, Some(10), Op::Write(1), Some(1)),
            op(20, Some(30), Op::Read, Some(0)),
        ];
        assert!(matches!(
            run(&ops),
            Verdict::NotLinearizable { stuck: 1, .. }
        ));
    }

    #[test]
    fn a_value_nobody_wrote_fails() {
        let ops = [
            op(0, Some(10), Op::Write(1), Some(1)),
            op(5, Some(30), Op::Read, Some(7)),
        ];
        assert!(matches!(run(&ops), Verdict::NotLinearizable { .. }));
    }

    #[test]
    fn reads_must_agree_on_one_order() {
        // Two writes overlap; one reader sees 1 then 2, the other 2 then 1: no single
        // order of the writes explains both.
        let ops = [
            op(0, Some(100), Op::Write(1), Some(1)),
            op(0, Some(100), Op::Write(2), Some(2)),
            op(10, Some(20), Op::Read, Some(1)),
            op(30, Some(40), Op::Read, Some(2)),
            op(10, Some(20), Op::Read, Some(2)),
            op(30, Some(40), Op::Read, Some(1)),
        ];
        assert!(matches!(run(&ops), Verdict::NotLinearizable { .. }));
    }

    #[test]
    fn unknown_write_may_or_may_not_have_happened() {
        let happened = [
            op(0, None, Op::Write(1), None),
            op(50, Some(60), Op::Read, Some(1)),
        ];
        assert_eq!(run(&happened), Verdict::Linearizable);
        let not_yet = [
            op(0, None, Op::Write(1), None),
            op(50, Some(60), Op::Read, Some(0)),
            op(70, Some(80), Op::Read, Some(1)),
        ];
        assert_eq!(run(&not_yet), Verdict::Linearizable);
        // But once seen it cannot be unseen.
        let flicker = [
            op(0, None, Op::Write(1), None),
            op(50, Some(60), Op::Read, Some(1)),
            op(70, Some(80), Op::Read, Some(0)),
        ];
        assert!(matches!(run(&flicker), Verdict::NotLinearizable { .. }));
    }

    #[test]
    fn the_budget_bounds_the_search() {
        let ops: Vec<_> = (0..12)
            .map(|i| op(0, Some(100), Op::Write(i), Some(i)))
            .chain([op(200, Some(300), Op::Read, Some(99))])
            .collect();
        assert_eq!(check(&Register, &ops, 10), Verdict::Unknown);
        assert!(matches!(run(&ops), Verdict::NotLinearizable { .. }));
    }
}
