//! Reading commands off a memory node's connection: RESP arrays of bulk strings, as every client
//! sends them, and the inline form (`PING\r\n`) that `redis-cli` and `telnet` users type.

use bytes::{Buf, Bytes, BytesMut};

/// The most arguments and the longest argument a memory node takes: far above anything the engine
/// sends, low enough that a garbled length does not make the node allocate gigabytes.
const MAX_ARGS: usize = 1 << 20;
const MAX_ARG_LEN: usize = 64 << 20;

/// Takes the next complete command out of `buf`: `Ok(None)` when more bytes are needed, `Err` with
/// the protocol error Redis would answer before closing the connection.
pub(crate) fn next_command(buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, String> {
    // Empty lines between commands are skipped, as by Redis.
    while buf.starts_with(b"\r\n") {
        buf.advance(2);
    }
    if buf.is_empty() {
        return Ok(None);
    }
    if buf[0] != b'*' {
        return inline(buf);
    }
    let mut pos = 0;
    let Some(count) = header(buf, &mut pos, b'*')? else {
        return Ok(None);
    };
    if count > MAX_ARGS {
        return Err("Protocol error: invalid multibulk length".into());
    }
    let mut spans = Vec::with_capacity(count);
    for _ in 0..count {
        let Some(len) = header(buf, &mut pos, b'$')? else {
            return Ok(None);
        };
        if len > MAX_ARG_LEN {
            return Err("Protocol error: invalid bulk length".into());
        }
        if buf.len() < pos + len + 2 {
            return Ok(None);
        }
        if &buf[pos + len..pos + len + 2] != b"\r\n" {
            return Err("Protocol error: bulk string not ended by CRLF".into());
        }
        spans.push((pos, len));
        pos += len + 2;
    }
    let frame = buf.split_to(pos).freeze();
    Ok(Some(
        spans
            .into_iter()
            .map(|(at, len)| frame.slice(at..at + len))
            .collect(),
    ))
}

/// One `<kind><decimal>\r\n` line at `pos`: its number, `None` if the line is not complete yet.
fn header(buf: &[u8], pos: &mut usize, kind: u8) -> Result<Option<usize>, String> {
    let Some(end) = buf[*pos..].windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let line = &buf[*pos..*pos + end];
    if line.first() != Some(&kind) {
        return Err(format!(
            "Protocol error: expected '{}', got '{}'",
            kind as char,
            line.first().map_or(' ', |&b| b as char)
        ));
    }
    let digits = &line[1..];
    let n = std::str::from_utf8(digits)
        .ok()
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse::<usize>().ok())
        .ok_or_else(|| format!("Protocol error: invalid {} length", kind as char))?;
    *pos += end + 2;
    Ok(Some(n))
}

/// An inline command: one line, arguments split on blanks.
fn inline(buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, String> {
    let Some(end) = buf.iter().position(|&b| b == b'\n') else {
        if buf.len() > MAX_ARG_LEN {
            return Err("Protocol error: too big inline request".into());
        }
        return Ok(None);
    };
    let line = buf.split_to(end + 1).freeze();
    let text = line.slice(..end);
    let text = text.strip_suffix(b"\r").unwrap_or(&text);
    Ok(Some(
        text.split(|b| b.is_ascii_whitespace())
            .filter(|part| !part.is_empty())
            .map(Bytes::copy_from_slice)
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_framed_whole_or_not_at_all() {
        let wire = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n";
        for cut in 0..wire.len() {
            let mut buf = BytesMut::from(&wire[..cut]);
            if let Some(cmd) = next_command(&mut buf).unwrap() {
                assert_eq!(cmd, [&b"GET"[..], b"k"]);
                assert!(cut >= 20, "complete at {cut}");
            }
        }
        let mut buf = BytesMut::from(&wire[..]);
        assert_eq!(
            next_command(&mut buf).unwrap().unwrap(),
            [&b"GET"[..], b"k"]
        );
        assert_eq!(next_command(&mut buf).unwrap().unwrap(), [&b"PING"[..]]);
        assert!(buf.is_empty());
        let mut bad = BytesMut::from(&b"*1\r\n+x\r\n"[..]);
        assert!(next_command(&mut bad).is_err());
    }
}
