//! Bounded RESP2 framing for every connection the engine opens itself: a node cannot make the engine
//! recurse or allocate past a fixed bound, whatever it sends.
//!
//! Why not `redis-protocol` alone: its decoder recurses once per nesting level (`*1\r\n` repeated 10^5
//! times overflowed the stack and aborted the process) and buffers whatever length a bulk string declares
//! (`$2000000000\r\n` grew the process to 312 MB). It has no knob for either, so [`scan`] walks the frame
//! headers first, iteratively (an array is a counter on a fixed stack of [`MAX_DEPTH`] counters, not a
//! call), and checks every declared length against [`Limits::max_size`] *before* anything is buffered for
//! it. Only a complete frame known to be within bounds is turned into a reply: directly into [`Reply`] on
//! the lock path ([`Framer::next_reply`], no second parse), or by `redis-protocol` for the subscriber, whose
//! frames are arrays (its recursion is then bounded by [`MAX_DEPTH`]).
//!
//! What a connection buffers is bounded too: an incomplete frame is at most `max_size` bytes (longer is a
//! [`Violation`]), so a read buffer holds at most `max_size` plus one read.

use std::fmt;

use bytes::{Bytes, BytesMut};

use crate::error::NodeError;
use crate::protocol::cmd::{NodeResult, Reply};

/// Deepest array nesting accepted. The engine's replies nest at most one level (a pub/sub message is an
/// array of bulk strings; no script returns a table); 8 leaves room for anything Redis might add.
pub(crate) const MAX_DEPTH: usize = 8;

/// Default for [`Limits::max_size`] (`Config::max_reply_size`): 4 MiB. The largest reply the engine
/// asks for is `INFO server`, a few KiB.
pub(crate) const DEFAULT_MAX_SIZE: usize = 4 << 20;

/// Longest server error message kept in a [`NodeError::Server`]: enough for any real Redis error,
/// small enough that a hostile node cannot make error values (which get logged) megabytes long.
const MAX_ERROR_TEXT: usize = 256;

/// How much one node may make the engine buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Largest reply, in bytes on the wire, and therefore the largest incomplete input buffered.
    pub(crate) max_size: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_size: DEFAULT_MAX_SIZE,
        }
    }
}

/// A bound the node's input broke, or input that is not RESP2. Either way the connection is closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Violation {
    /// Arrays nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// A reply (declared or buffered) larger than `max_size` bytes.
    TooLarge { max_size: usize },
    /// Not RESP2: a bad length, a missing CRLF, an unknown (or RESP3) type byte.
    Malformed(&'static str),
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooDeep => write!(f, "reply nested deeper than {MAX_DEPTH} levels"),
            Self::TooLarge { max_size } => {
                write!(f, "reply larger than max_reply_size ({max_size} bytes)")
            }
            Self::Malformed(what) => write!(f, "malformed reply: {what}"),
        }
    }
}

impl Violation {
    /// The node error requests on the connection fail with: names the node and the bound.
    pub(crate) fn node_error(&self, node: &dyn fmt::Display) -> NodeError {
        NodeError::Protocol(format!("{node}: {self}; connection closed"))
    }
}

/// Where the input stands: not yet a whole frame, or a whole frame of this many bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scan {
    Incomplete,
    Complete(usize),
}

/// Longest header line (`$`, `*`, `:`): a sign and 19 digits, then CRLF.
const MAX_NUMBER_LINE: usize = 20;

/// Frames one connection's input: walks the first frame's headers without recursion or allocation and
/// resumes where it stopped when more input arrives, so a reply that trickles in costs one pass over its
/// headers in total, not one per read (bulk bodies are skipped, not read).
#[derive(Debug, Clone)]
pub(crate) struct Framer {
    limits: Limits,
    /// Elements still expected at each open array level, innermost last.
    open: [usize; MAX_DEPTH],
    depth: usize,
    /// Where the first element not yet fully scanned starts.
    pos: usize,
    /// How much input the last incomplete scan saw.
    seen: usize,
    /// When the element at `pos` is a bulk string whose body is not all in: the input length it needs.
    need: usize,
}

impl Framer {
    pub(crate) fn new(limits: Limits) -> Self {
        Self {
            limits,
            open: [0; MAX_DEPTH],
            depth: 0,
            pos: 0,
            seen: 0,
            need: 0,
        }
    }

    /// Takes the first complete frame off `buf`, if there is one, after checking it against the
    /// limits. `buf` must only have grown since the last call.
    pub(crate) fn next_frame(&mut self, buf: &mut BytesMut) -> Result<Option<BytesMut>, Violation> {
        match self.scan(buf)? {
            Scan::Incomplete => Ok(None),
            Scan::Complete(len) => Ok(Some(buf.split_to(len))),
        }
    }

    /// Takes the first complete reply off `buf` as the algorithm sees it (the lock path: no second
    /// parse, no frame tree). Server errors become [`NodeError::Server`].
    pub(crate) fn next_reply(
        &mut self,
        buf: &mut BytesMut,
    ) -> Result<Option<NodeResult>, Violation> {
        Ok(self.next_frame(buf)?.map(|frame| to_reply(frame.freeze())))
    }

    /// Where the first frame of `buf` stands; resumes the previous incomplete scan.
    pub(crate) fn scan(&mut self, buf: &[u8]) -> Result<Scan, Violation> {
        let result = self.scan_inner(buf);
        if !matches!(result, Ok(Scan::Incomplete)) {
            *self = Self::new(self.limits);
        }
        result
    }

    fn scan_inner(&mut self, buf: &[u8]) -> Result<Scan, Violation> {
        let max_size = self.limits.max_size;
        let too_large = Violation::TooLarge { max_size };
        // Resuming inside one element: a status/error line can only end with a `\n` in the new input,
        // a bulk body only once `need` bytes are in. Anything else is rescanned (a few bytes).
        let waiting = match buf.get(self.pos) {
            Some(b'+' | b'-') => memchr(b'\n', &buf[self.seen.max(self.pos)..]).is_none(),
            Some(b'$') => buf.len() < self.need,
            _ => false,
        };
        if self.seen > 0 && waiting && buf.len() <= max_size {
            self.seen = buf.len();
            return Ok(Scan::Incomplete);
        }
        let mut pos = self.pos;
        loop {
            let at = pos;
            let incomplete = |me: &mut Self| {
                me.pos = at;
                me.seen = buf.len();
                Ok(Scan::Incomplete)
            };
            let Some(&kind) = buf.get(pos) else {
                return incomplete(self);
            };
            let line_max = match kind {
                b'+' | b'-' => max_size,
                _ => MAX_NUMBER_LINE,
            };
            let start = pos + 1;
            // The line's content, then CRLF.
            let limit = line_max.saturating_add(2);
            let window = &buf[start..buf.len().min(start.saturating_add(limit))];
            let Some(nl) = memchr(b'\n', window) else {
                if window.len() >= limit {
                    return Err(if line_max == MAX_NUMBER_LINE {
                        Violation::Malformed("length or integer too long")
                    } else {
                        too_large
                    });
                }
                if buf.len() > max_size {
                    return Err(too_large);
                }
                return incomplete(self);
            };
            if nl == 0 || window[nl - 1] != b'\r' {
                return Err(Violation::Malformed("line not ended by CRLF"));
            }
            let line = &window[..nl - 1];
            pos = start + nl + 1;
            match kind {
                // A lone CR inside the line would make readers disagree on where it ends.
                b'+' | b'-' if memchr(b'\r', line).is_some() => {
                    return Err(Violation::Malformed("CR inside a status or error line"))
                }
                b'+' | b'-' => {}
                b':' => {
                    parse_int(line).ok_or(Violation::Malformed("bad integer"))?;
                }
                b'$' => match parse_len(line)? {
                    None => {}
                    Some(len) => {
                        // Checked before a byte of the body is awaited: a huge declaration fails here.
                        let end = pos
                            .checked_add(len)
                            .and_then(|e| e.checked_add(2))
                            .filter(|&e| e <= max_size)
                            .ok_or(too_large.clone())?;
                        if buf.len() < end {
                            self.need = end;
                            return incomplete(self);
                        }
                        if &buf[end - 2..end] != b"\r\n" {
                            return Err(Violation::Malformed("bulk string not ended by CRLF"));
                        }
                        pos = end;
                    }
                },
                b'*' => match parse_len(line)? {
                    None | Some(0) => {}
                    Some(count) => {
                        // Every element takes at least 3 bytes (`+\r\n`).
                        if count > max_size / 3 {
                            return Err(too_large);
                        }
                        if self.depth == MAX_DEPTH {
                            return Err(Violation::TooDeep);
                        }
                        self.open[self.depth] = count;
                        self.depth += 1;
                        if pos > max_size {
                            return Err(too_large);
                        }
                        continue;
                    }
                },
                b'>' | b'%' | b'~' | b'_' | b',' | b'#' | b'!' | b'=' | b'(' | b'|' => {
                    return Err(Violation::Malformed("RESP3 type on a RESP2 connection"))
                }
                _ => return Err(Violation::Malformed("unknown type byte")),
            }
            if pos > max_size {
                return Err(too_large);
            }
            // One element done: close every array it completes.
            while self.depth > 0 {
                self.open[self.depth - 1] -= 1;
                if self.open[self.depth - 1] > 0 {
                    break;
                }
                self.depth -= 1;
            }
            if self.depth == 0 {
                return Ok(Scan::Complete(pos));
            }
        }
    }
}

/// [`Framer::scan`] from scratch, for one-off checks.
#[cfg(test)]
pub(crate) fn scan(buf: &[u8], limits: &Limits) -> Result<Scan, Violation> {
    Framer::new(*limits).scan(buf)
}

/// Reads one frame [`Framer::scan`] found complete and well formed.
pub(super) fn to_reply(frame: Bytes) -> NodeResult {
    // `scan` checked the CRLFs; a line's content is between the type byte and the first CRLF.
    let line_end = memchr(b'\r', &frame).unwrap_or(frame.len());
    let line = || frame.slice(1..line_end);
    match frame[0] {
        b'+' if &frame[1..line_end] == b"OK" => Ok(Reply::Ok),
        b'+' => Ok(Reply::Status(line())),
        b'-' => {
            let text = &frame[1..line_end];
            let text = &text[..text.len().min(MAX_ERROR_TEXT)];
            Err(NodeError::Server(
                String::from_utf8_lossy(text).into_owned(),
            ))
        }
        b':' => Ok(Reply::Int(parse_int(&frame[1..line_end]).unwrap_or(0))),
        b'$' if frame[1] == b'-' => Ok(Reply::Nil),
        b'$' => Ok(Reply::Data(frame.slice(line_end + 2..frame.len() - 2))),
        b'*' => Ok(time_reply(&frame).map_or(Reply::Other, Reply::Time)),
        _ => Ok(Reply::Other),
    }
}

/// A `TIME` reply: `*2`, then two bulk strings of 1-19 digits (seconds, then microseconds below one
/// million), as microseconds since the Unix epoch. Any other array is `None`.
fn time_reply(frame: &[u8]) -> Option<i64> {
    let rest = frame.strip_prefix(b"*2\r\n")?;
    let (secs, rest) = bulk_digits(rest)?;
    let (micros, rest) = bulk_digits(rest)?;
    if !rest.is_empty() || micros >= 1_000_000 {
        return None;
    }
    secs.checked_mul(1_000_000)?.checked_add(micros)
}

/// One `$len\r\n<digits>\r\n` at the start of `buf`: its value and what follows.
fn bulk_digits(buf: &[u8]) -> Option<(i64, &[u8])> {
    let (body, rest) = bulk(buf)?;
    if body.is_empty() || !body.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some((parse_int(body)?, rest))
}

/// One `$len\r\n<body>\r\n` at the start of `buf`: its body and what follows.
fn bulk(buf: &[u8]) -> Option<(&[u8], &[u8])> {
    let rest = buf.strip_prefix(b"$")?;
    let nl = memchr(b'\r', rest)?;
    let len: usize = std::str::from_utf8(&rest[..nl]).ok()?.parse().ok()?;
    let body = rest.get(nl + 2..nl + 2 + len)?;
    Some((body, rest.get(nl + 4 + len..)?))
}

/// A `CONFIG GET <one parameter>` reply, `*2` of name and value: the value. `None` for an empty array
/// (no such parameter) or anything else; a server error (`NOPERM`, a renamed command) is `Err`.
pub(super) fn config_value(frame: &[u8]) -> Result<Option<String>, NodeError> {
    if frame.first() == Some(&b'-') {
        return to_reply(Bytes::copy_from_slice(frame)).map(|_| None);
    }
    let pair = frame.strip_prefix(b"*2\r\n").and_then(|rest| {
        let (_name, rest) = bulk(rest)?;
        let (value, rest) = bulk(rest)?;
        rest.is_empty()
            .then(|| String::from_utf8_lossy(value).into_owned())
    });
    Ok(pair)
}

/// A length: `-1` (null) is `None`; other negatives, signs, blanks and non-digits are malformed.
fn parse_len(line: &[u8]) -> Result<Option<usize>, Violation> {
    match line {
        b"-1" => Ok(None),
        _ if line.is_empty() || line.len() > 19 || !line.iter().all(u8::is_ascii_digit) => {
            Err(Violation::Malformed("bad length"))
        }
        // At most 19 digits: fits a u64, and `usize` is 64 bits on every target this builds for.
        _ => Ok(Some(line.iter().fold(0usize, |n, d| {
            n.saturating_mul(10).saturating_add(usize::from(d - b'0'))
        }))),
    }
}

/// A RESP integer: an optional `-`, then 1 to 19 digits, within `i64`.
fn parse_int(line: &[u8]) -> Option<i64> {
    let (neg, digits) = match line.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, line),
    };
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let magnitude = digits.iter().try_fold(0i64, |n, d| {
        n.checked_mul(10)?.checked_sub(i64::from(d - b'0'))
    })?;
    // Accumulated negative so that i64::MIN parses.
    if neg {
        Some(magnitude)
    } else {
        magnitude.checked_neg()
    }
}

fn memchr(byte: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == byte)
}

#[cfg(test)]
#[path = "bounded_tests.rs"]
mod tests;
