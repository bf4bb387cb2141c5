//! Inbound framing: Kafka frames are an `int32` size followed by that many bytes.
//!
//! The size is checked against the configured maximum before anything is allocated for
//! the body, and the body is accumulated only as bytes actually arrive, so a hostile or
//! confused peer (for example a TLS server answering a plaintext client: `16 03 03 ..`
//! reads as a 369 MB frame) costs a typed error, never a large allocation.

use bytes::{Bytes, BytesMut};

use super::error::ConnError;

/// Splits a received byte stream into frames.
#[derive(Debug)]
pub(crate) struct FrameReader {
    max_frame: usize,
    buf: BytesMut,
    /// Size of the frame being accumulated, once its 4-byte prefix has arrived.
    want: Option<usize>,
}

impl FrameReader {
    pub(crate) fn new(max_frame: usize) -> Self {
        FrameReader {
            max_frame,
            buf: BytesMut::new(),
            want: None,
        }
    }

    /// Appends received bytes. Call [`FrameReader::next_frame`] until it returns `None`.
    pub(crate) fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The next complete frame body (size prefix removed), if one has arrived.
    pub(crate) fn next_frame(&mut self) -> Result<Option<Bytes>, ConnError> {
        let size = match self.want {
            Some(size) => size,
            None => {
                if self.buf.len() < 4 {
                    return Ok(None);
                }
                let raw = i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                let size = usize::try_from(raw).map_err(|_| ConnError::NegativeFrameSize(raw))?;
                if size > self.max_frame {
                    // A TLS record header (content type alert/handshake, version 3.x)
                    // where the frame size should be: a TLS listener.
                    if matches!(self.buf[0], 21 | 22) && self.buf[1] == 3 && self.buf[2] <= 4 {
                        return Err(ConnError::TlsOnPlaintext {
                            record_type: self.buf[0],
                        });
                    }
                    return Err(ConnError::FrameTooLarge {
                        size,
                        max: self.max_frame,
                    });
                }
                let _ = self.buf.split_to(4);
                self.want = Some(size);
                size
            }
        };
        if self.buf.len() < size {
            return Ok(None);
        }
        self.want = None;
        Ok(Some(self.buf.split_to(size).freeze()))
    }

    /// Bytes received but not yet returned as frames.
    #[cfg(test)]
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(sizes: &[usize]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, &s) in sizes.iter().enumerate() {
            out.extend_from_slice(&(s as i32).to_be_bytes());
            out.extend(std::iter::repeat_n(i as u8, s));
        }
        out
    }

    #[test]
    fn frames_split_at_every_boundary_reassemble() {
        let stream = frames(&[0, 1, 7, 300]);
        for split in 0..=stream.len() {
            let mut r = FrameReader::new(1024);
            let mut got = Vec::new();
            for part in [&stream[..split], &stream[split..]] {
                r.push(part);
                while let Some(f) = r.next_frame().unwrap() {
                    got.push(f);
                }
            }
            assert_eq!(
                got.iter().map(Bytes::len).collect::<Vec<_>>(),
                vec![0, 1, 7, 300],
                "split {split}"
            );
            assert_eq!(got[3][0], 3);
            assert_eq!(r.buffered(), 0);
        }
    }

    #[test]
    fn byte_at_a_time_works() {
        let stream = frames(&[5, 2]);
        let mut r = FrameReader::new(16);
        let mut n = 0;
        for b in &stream {
            r.push(std::slice::from_ref(b));
            while r.next_frame().unwrap().is_some() {
                n += 1;
            }
        }
        assert_eq!(n, 2);
    }

    #[test]
    fn oversize_and_negative_sizes_fail_before_allocating() {
        let mut r = FrameReader::new(100 << 20);
        // What a TLS server sends to a plaintext client: a handshake record header.
        r.push(&[0x16, 0x03, 0x03, 0x00, 0x7a]);
        assert!(matches!(
            r.next_frame(),
            Err(ConnError::TlsOnPlaintext { record_type: 22 })
        ));
        assert!(
            r.buf.capacity() < 4096,
            "no allocation sized by the bogus length"
        );
        let mut r = FrameReader::new(1 << 20);
        r.push(&[0x7f, 0xff, 0xff, 0xff]);
        assert!(matches!(
            r.next_frame(),
            Err(ConnError::FrameTooLarge {
                size: 2_147_483_647,
                ..
            })
        ));
        let mut r = FrameReader::new(1024);
        r.push(&(-5i32).to_be_bytes());
        assert!(matches!(
            r.next_frame(),
            Err(ConnError::NegativeFrameSize(-5))
        ));
    }
}
