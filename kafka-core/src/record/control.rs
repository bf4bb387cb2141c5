//! Control records: transaction markers (and KRaft control types, passed through).

use bytes::Bytes;

use super::encode::{BatchEncoder, BatchOptions, EncodedBatch};
use super::record::{NewRecord, Record};
use super::RecordError;

/// The type in a control record's key (`ControlRecordType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    /// Transaction abort marker (0).
    Abort,
    /// Transaction commit marker (1).
    Commit,
    /// KRaft leader change (2).
    LeaderChange,
    /// KRaft snapshot header (3).
    SnapshotHeader,
    /// KRaft snapshot footer (4).
    SnapshotFooter,
    /// KRaft version (5).
    KraftVersion,
    /// KRaft voters (6).
    KraftVoters,
    /// A type this client does not know; consumers skip it.
    Unknown(i16),
}

impl ControlRecordType {
    /// The type with wire id `id`.
    pub fn from_id(id: i16) -> Self {
        match id {
            0 => Self::Abort,
            1 => Self::Commit,
            2 => Self::LeaderChange,
            3 => Self::SnapshotHeader,
            4 => Self::SnapshotFooter,
            5 => Self::KraftVersion,
            6 => Self::KraftVoters,
            other => Self::Unknown(other),
        }
    }

    /// The wire id.
    pub fn id(self) -> i16 {
        match self {
            Self::Abort => 0,
            Self::Commit => 1,
            Self::LeaderChange => 2,
            Self::SnapshotHeader => 3,
            Self::SnapshotFooter => 4,
            Self::KraftVersion => 5,
            Self::KraftVoters => 6,
            Self::Unknown(id) => id,
        }
    }
}

/// A decoded control record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlRecord {
    /// Transaction marker: commit or abort, with the coordinator's epoch.
    EndTransaction {
        /// `true` for COMMIT, `false` for ABORT.
        commit: bool,
        /// Epoch of the transaction coordinator that wrote the marker.
        coordinator_epoch: i32,
    },
    /// Any other control type (KRaft metadata log records, unknown types); its value
    /// is kept undecoded.
    Other {
        /// The type from the key.
        kind: ControlRecordType,
        /// The raw value.
        value: Option<Bytes>,
    },
}

/// Key: `int16 version (0)`, `int16 type`.
const KEY_LEN: usize = 4;
/// Value of a transaction marker: `int16 version (0)`, `int32 coordinator epoch`.
const END_TXN_VALUE_LEN: usize = 6;

impl ControlRecord {
    /// Interprets a record from a control batch.
    pub fn decode(record: &Record) -> Result<Self, RecordError> {
        let key = record
            .key
            .as_deref()
            .ok_or(RecordError::InvalidControlRecord("null key"))?;
        if key.len() < KEY_LEN {
            return Err(RecordError::InvalidControlRecord(
                "key shorter than 4 bytes",
            ));
        }
        let version = i16::from_be_bytes([key[0], key[1]]);
        if version < 0 {
            return Err(RecordError::InvalidControlRecord("negative key version"));
        }
        // A newer key version is read as the highest known one (0).
        let kind = ControlRecordType::from_id(i16::from_be_bytes([key[2], key[3]]));
        match kind {
            ControlRecordType::Abort | ControlRecordType::Commit => {
                let value = record
                    .value
                    .as_deref()
                    .ok_or(RecordError::InvalidControlRecord("null marker value"))?;
                if value.len() < END_TXN_VALUE_LEN {
                    return Err(RecordError::InvalidControlRecord(
                        "marker value shorter than 6 bytes",
                    ));
                }
                if i16::from_be_bytes([value[0], value[1]]) < 0 {
                    return Err(RecordError::InvalidControlRecord("negative marker version"));
                }
                Ok(Self::EndTransaction {
                    commit: kind == ControlRecordType::Commit,
                    coordinator_epoch: i32::from_be_bytes([value[2], value[3], value[4], value[5]]),
                })
            }
            _ => Ok(Self::Other {
                kind,
                value: record.value.clone(),
            }),
        }
    }

    /// The control type.
    pub fn kind(&self) -> ControlRecordType {
        match self {
            Self::EndTransaction { commit: true, .. } => ControlRecordType::Commit,
            Self::EndTransaction { commit: false, .. } => ControlRecordType::Abort,
            Self::Other { kind, .. } => *kind,
        }
    }

    /// The 4 key bytes (version 0).
    pub fn key_bytes(&self) -> [u8; KEY_LEN] {
        let t = self.kind().id().to_be_bytes();
        [0, 0, t[0], t[1]]
    }

    /// The value bytes (version 0 for markers).
    pub fn value_bytes(&self) -> Option<Bytes> {
        match self {
            Self::EndTransaction {
                coordinator_epoch, ..
            } => {
                let e = coordinator_epoch.to_be_bytes();
                Some(Bytes::copy_from_slice(&[0, 0, e[0], e[1], e[2], e[3]]))
            }
            Self::Other { value, .. } => value.clone(),
        }
    }

    /// Appends a control batch holding this one record, as the broker writes
    /// transaction markers (control and transactional flags set). Used by tests and the
    /// simulated broker.
    pub fn encode_batch(
        &self,
        opts: &BatchOptions,
        timestamp: i64,
        out: &mut Vec<u8>,
    ) -> Result<EncodedBatch, RecordError> {
        let key = self.key_bytes();
        let value = self.value_bytes();
        let opts = BatchOptions {
            control: true,
            transactional: matches!(self, Self::EndTransaction { .. }) || opts.transactional,
            ..*opts
        };
        BatchEncoder::new().encode(
            &opts,
            [NewRecord {
                timestamp,
                key: Some(&key),
                value: value.as_deref(),
                headers: &[],
            }],
            out,
        )
    }
}
