//! The fuzz input as a stream of small decisions. Reads past the end give zeros, so
//! every input is a complete script and a short one ends in the default (happy) path.

/// The bytes of one action (its opcode first), and of the settings read at the start.
pub const STEP: usize = 48;

/// A cursor over the fuzz input.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Input { data, pos: 0 }
    }

    /// The next `n` bytes as an input of their own (zeros past their end), and this one
    /// moved past them: each action reads one fixed-size chunk, so a mutation stays in
    /// its action and seed scripts are easy to write.
    pub fn chunk(&mut self, n: usize) -> Input<'a> {
        let start = self.pos.min(self.data.len());
        let end = (start + n).min(self.data.len());
        self.pos = start + n;
        Input::new(&self.data[start..end])
    }

    /// Whether every byte was read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// The next byte (0 past the end).
    pub fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// The next two bytes, big-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }

    /// The next four bytes, big-endian.
    pub fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// The next eight bytes, big-endian.
    pub fn u64(&mut self) -> u64 {
        (u64::from(self.u32()) << 32) | u64::from(self.u32())
    }

    /// A value below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        if n <= 256 {
            usize::from(self.u8()) % n
        } else {
            usize::from(self.u16()) % n
        }
    }

    /// True with probability about `1/n` (and false past the end).
    pub fn one_in(&mut self, n: u8) -> bool {
        n > 0 && self.u8() % n == n - 1
    }

    /// Up to `max` raw bytes (a length byte, then the bytes).
    pub fn bytes(&mut self, max: usize) -> &'a [u8] {
        let want = self.below(max + 1);
        let start = self.pos.min(self.data.len());
        let end = (start + want).min(self.data.len());
        self.pos = start + want;
        &self.data[start..end]
    }

    /// An error code: mostly none, else one of Kafka's (or, rarely, any i16).
    pub fn error_code(&mut self) -> i16 {
        match self.u8() {
            0..=159 => 0,
            160..=250 => i16::from(self.u8() % 120) - 1,
            _ => self.u16() as i16,
        }
    }

    /// An offset-like i64: mostly small and non-negative (0 from zeros), sometimes -1
    /// or anything.
    pub fn offset(&mut self) -> i64 {
        match self.u8() % 8 {
            6 => -1,
            7 => self.u64() as i64,
            _ => i64::from(self.u16()),
        }
    }

    /// An epoch-like i32: mostly 0..6 (0 from zeros), sometimes -1 or anything.
    pub fn epoch(&mut self) -> i32 {
        match self.u8() % 8 {
            6 => -1,
            7 => self.u32() as i32,
            b => i32::from(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_end_are_zero() {
        let mut i = Input::new(&[7, 1, 2]);
        assert_eq!(i.u8(), 7);
        assert_eq!(i.u16(), 0x0102);
        assert!(i.is_empty());
        assert_eq!(i.u32(), 0);
        assert_eq!(i.bytes(10), &[] as &[u8]);
        assert_eq!(i.below(5), 0);
    }
}
