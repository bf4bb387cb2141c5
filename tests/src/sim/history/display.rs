//! How verdicts, anomalies and records print: each anomaly names its records (topic,
//! partition, offset, value as lossy UTF-8, send id).

use std::fmt;

use super::{Anomaly, Rec, SendId, Verdict};

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} anomalies in {} sends ({} acked) and {} reads",
            self.anomalies.len(),
            self.sends,
            self.acked,
            self.reads
        )?;
        const SHOWN: usize = 20;
        for a in self.anomalies.iter().take(SHOWN) {
            write!(f, "\n  {a}")?;
        }
        if self.anomalies.len() > SHOWN {
            write!(f, "\n  ... and {} more", self.anomalies.len() - SHOWN)?;
        }
        Ok(())
    }
}

impl fmt::Display for Anomaly {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.kind())?;
        match self {
            Anomaly::LostAck { session, record } => {
                write!(
                    f,
                    "{record} acked but not read by complete session {session}"
                )
            }
            Anomaly::Duplicate { record, offsets } => {
                write!(f, "{record} read at offsets {offsets:?}")
            }
            Anomaly::DoubleDelivery { session, record } => {
                write!(f, "{record} read twice by {session}")
            }
            Anomaly::Reordered {
                producer,
                by,
                earlier,
                later,
            } => write!(
                f,
                "{producer} sent {earlier} before {later} ({by:?} offsets)"
            ),
            Anomaly::OffsetMismatch {
                session,
                record,
                acked,
            } => write!(f, "{record} read by {session}, acked at offset {acked}"),
            Anomaly::Rewound {
                session,
                previous,
                record,
            } => write!(f, "{session} read {record} after {previous}"),
            Anomaly::Skipped { session, record } => {
                write!(f, "{session} read past {record} without reading it")
            }
            Anomaly::AbortedRead {
                session,
                record,
                txn,
                cause,
            } => write!(
                f,
                "{session} (read_committed) read {record} of txn {txn} ({cause:?})"
            ),
            Anomaly::UncommittedRead {
                session,
                record,
                txn,
                outcome,
            } => write!(
                f,
                "{session} (read_committed) read {record} of txn {txn} (outcome {outcome:?})"
            ),
            Anomaly::TornTxn {
                session,
                txn,
                seen,
                missing,
            } => {
                write!(f, "{session} saw part of committed txn {txn}: read")?;
                for r in seen {
                    write!(f, " {r}")?;
                }
                write!(f, "; missing")?;
                for r in missing {
                    write!(f, " {r}")?;
                }
                Ok(())
            }
            Anomaly::PhantomRead {
                session,
                record,
                sent_elsewhere,
            } => {
                write!(f, "{session} read {record}, never sent there")?;
                match sent_elsewhere {
                    Some(s) => write!(f, " (sent as {s})"),
                    None => Ok(()),
                }
            }
            Anomaly::FailedButWritten { session, record } => {
                write!(f, "{record} failed but was read by {session}")
            }
            Anomaly::DoubleOutcome {
                record,
                first,
                second,
            } => write!(f, "{record}: outcome {first:?}, then {second:?}"),
            Anomaly::MissingOutcome { record } => write!(f, "{record} never got an outcome"),
        }
    }
}

impl fmt::Display for Rec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.topic, self.partition)?;
        if let Some(o) = self.offset {
            write!(f, "@{o}")?;
        }
        write!(f, " {:?}", String::from_utf8_lossy(&self.value))?;
        if let Some(SendId(n)) = self.send {
            write!(f, " (send #{n})")?;
        }
        Ok(())
    }
}
