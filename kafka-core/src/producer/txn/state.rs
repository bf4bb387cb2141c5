//! The transactional producer's states and the transitions allowed between them, kept
//! as data: [`TRANSITIONS`] is the only place that says what may follow what, the
//! machine asks [`allowed`] before every move, and the diagram in `docs/TRANSACTIONS.md`
//! is rendered from the table (a test fails when the two differ).

use std::fmt;

/// Where a transactional producer stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnState {
    /// Created; `init_transactions` not called yet.
    Uninitialized,
    /// InitProducerId is under way (first id, fencing older instances, or an epoch bump
    /// after an abort).
    Initializing,
    /// No transaction open; `begin_transaction` may be called.
    Ready,
    /// A transaction is open: records and offsets may be added to it.
    InTransaction,
    /// Flushing, then EndTxn(commit) until its outcome is known.
    Committing,
    /// Dropping unsent records, then EndTxn(abort) until its outcome is known.
    Aborting,
    /// The open transaction cannot commit; only `abort_transaction` is allowed.
    AbortableError,
    /// The producer is finished (fenced, unauthorized, or an outcome it cannot resolve).
    FatalError,
}

use TxnState::*;

impl TxnState {
    /// Every state, in declaration order.
    pub const ALL: [TxnState; 8] = [
        Uninitialized,
        Initializing,
        Ready,
        InTransaction,
        Committing,
        Aborting,
        AbortableError,
        FatalError,
    ];

    /// The state's name as the docs and errors spell it.
    pub fn name(self) -> &'static str {
        match self {
            Uninitialized => "Uninitialized",
            Initializing => "Initializing",
            Ready => "Ready",
            InTransaction => "InTransaction",
            Committing => "Committing",
            Aborting => "Aborting",
            AbortableError => "AbortableError",
            FatalError => "FatalError",
        }
    }
}

impl fmt::Display for TxnState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One allowed move: from, to, and what causes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    /// The state left.
    pub from: TxnState,
    /// The state entered.
    pub to: TxnState,
    /// What causes the move.
    pub cause: &'static str,
}

const fn t(from: TxnState, to: TxnState, cause: &'static str) -> Transition {
    Transition { from, to, cause }
}

/// Every allowed transition. Any state may also move to [`TxnState::FatalError`]
/// (listed last, once per state), and nothing leaves it.
pub const TRANSITIONS: &[Transition] = &[
    t(Uninitialized, Initializing, "init_transactions"),
    t(Initializing, Ready, "InitProducerId answered"),
    t(Ready, InTransaction, "begin_transaction"),
    t(InTransaction, Committing, "commit_transaction"),
    t(InTransaction, Aborting, "abort_transaction"),
    t(InTransaction, AbortableError, "a record or offset failed"),
    t(Committing, Ready, "EndTxn(commit) answered"),
    t(Committing, AbortableError, "a record failed before EndTxn"),
    t(AbortableError, Aborting, "abort_transaction"),
    t(Aborting, Ready, "EndTxn(abort) answered"),
    t(Aborting, Initializing, "aborted; the epoch must be bumped"),
    t(Uninitialized, FatalError, "fatal error"),
    t(Initializing, FatalError, "fatal error"),
    t(Ready, FatalError, "fatal error"),
    t(InTransaction, FatalError, "fatal error"),
    t(Committing, FatalError, "fatal error"),
    t(Aborting, FatalError, "fatal error"),
    t(AbortableError, FatalError, "fatal error"),
];

/// Whether the table allows moving from `from` to `to`.
pub fn allowed(from: TxnState, to: TxnState) -> bool {
    TRANSITIONS.iter().any(|t| t.from == from && t.to == to)
}

/// The table as a Mermaid state diagram (the block `docs/TRANSACTIONS.md` shows).
pub fn mermaid() -> String {
    let mut out = String::from("stateDiagram-v2\n    [*] --> Uninitialized\n");
    for t in TRANSITIONS.iter().filter(|t| t.to != FatalError) {
        out.push_str(&format!("    {} --> {}: {}\n", t.from, t.to, t.cause));
    }
    out.push_str("    note right of FatalError: every state may move here\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The moves the machine makes, written out independently of the table: the table
    /// must allow exactly these.
    const EXPECTED: &[(TxnState, TxnState)] = &[
        (Uninitialized, Initializing),
        (Initializing, Ready),
        (Ready, InTransaction),
        (InTransaction, Committing),
        (InTransaction, Aborting),
        (InTransaction, AbortableError),
        (Committing, Ready),
        (Committing, AbortableError),
        (AbortableError, Aborting),
        (Aborting, Ready),
        (Aborting, Initializing),
    ];

    #[test]
    fn every_pair_of_states_is_allowed_or_forbidden_as_the_design_says() {
        for from in TxnState::ALL {
            for to in TxnState::ALL {
                let want = EXPECTED.contains(&(from, to)) || (to == FatalError && from != to);
                assert_eq!(allowed(from, to), want, "{from} -> {to}");
            }
        }
    }

    #[test]
    fn nothing_leaves_the_fatal_state_and_every_other_state_can_reach_ready() {
        assert!(TRANSITIONS.iter().all(|t| t.from != FatalError));
        for start in TxnState::ALL.into_iter().filter(|s| *s != FatalError) {
            let mut seen = vec![start];
            let mut i = 0;
            while i < seen.len() {
                let at = seen[i];
                for t in TRANSITIONS.iter().filter(|t| t.from == at) {
                    if !seen.contains(&t.to) {
                        seen.push(t.to);
                    }
                }
                i += 1;
            }
            assert!(seen.contains(&Ready), "{start} cannot reach Ready");
        }
    }

    #[test]
    fn the_documented_diagram_is_the_table() {
        let doc = include_str!("../../../../docs/TRANSACTIONS.md");
        let block = doc
            .split("```mermaid\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("docs/TRANSACTIONS.md has a mermaid block");
        assert_eq!(
            block,
            mermaid(),
            "docs/TRANSACTIONS.md drifted from producer/txn/state.rs; put this block there:\n{}",
            mermaid()
        );
    }
}
