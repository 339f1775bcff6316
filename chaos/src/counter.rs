//! The protected resource: a counter on a separate "storage" redis-server, read and written back with a
//! pause in between (Jepsen's lock workload). If two holders ever interleave, an increment is lost.
//! Deliberately not atomic (no INCR): the lock is the only thing keeping the read-modify-write safe.
//!
//! Next to it, the **fenced store** ([`Counter::fenced_write`]): a Lua script on the same node that
//! accepts a write only if its fencing token is `>=` the highest token it accepted for the resource.

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use testkit::resp::encode;

/// The counter of `resource` on the storage node.
pub fn counter_key(resource: &str) -> String {
    format!("counter:{resource}")
}

/// The mirror of `resource`'s counter, written second by a read-write lock's writer.
pub fn mirror_key(resource: &str) -> String {
    format!("mirror:{resource}")
}

/// One connection to the storage node.
#[derive(Debug)]
pub struct Counter {
    conn: BufReader<TcpStream>,
}

impl Counter {
    /// Connects to `127.0.0.1:port`.
    pub async fn connect(port: u16) -> std::io::Result<Self> {
        let stream = TcpStream::connect(("127.0.0.1", port)).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            conn: BufReader::new(stream),
        })
    }

    /// `GET key`, 0 if missing.
    pub async fn get(&mut self, key: &str) -> std::io::Result<i64> {
        let reply = self.call(&[b"GET", key.as_bytes()]).await?;
        Ok(reply.and_then(|s| s.parse().ok()).unwrap_or(0))
    }

    /// `SET key value`.
    pub async fn set(&mut self, key: &str, value: i64) -> std::io::Result<()> {
        self.call(&[b"SET", key.as_bytes(), value.to_string().as_bytes()])
            .await
            .map(drop)
    }

    /// A write to the fenced store of `resource` with `token`: `Some(seq)` if accepted (`seq` numbers
    /// the store's accepted writes of that resource, 1, 2, …, in the order the store applied them),
    /// `None` if rejected because a higher token was already accepted.
    pub async fn fenced_write(
        &mut self,
        resource: &str,
        token: u64,
    ) -> std::io::Result<Option<u64>> {
        let keys = fence_keys(resource);
        let token = pad_token(token);
        let reply = self
            .call(&[
                b"EVAL",
                FENCED_WRITE.as_bytes(),
                b"3",
                keys[0].as_bytes(),
                keys[1].as_bytes(),
                keys[2].as_bytes(),
                token.as_bytes(),
            ])
            .await?;
        let seq: u64 = reply
            .as_deref()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("fenced write: reply {reply:?}")))?;
        Ok((seq > 0).then_some(seq))
    }

    /// Sends one command and reads a simple or bulk reply (`None` for nil).
    async fn call(&mut self, args: &[&[u8]]) -> std::io::Result<Option<String>> {
        self.conn.get_mut().write_all(&encode(args)).await?;
        let mut line = String::new();
        if self.conn.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end();
        match line.as_bytes().first() {
            Some(b'$') => {
                let len: i64 = line[1..].parse().map_err(std::io::Error::other)?;
                if len < 0 {
                    return Ok(None);
                }
                let mut body = vec![0u8; len as usize + 2];
                self.conn.read_exact(&mut body).await?;
                body.truncate(len as usize);
                Ok(Some(String::from_utf8_lossy(&body).into_owned()))
            }
            Some(b'-') => Err(std::io::Error::other(line.to_string())),
            _ => Ok(Some(line[1..].to_string())),
        }
    }
}

/// The fenced store's write. Tokens are `u64`, which counters raised by older versions put above
/// 2^53, so they are not compared as Lua numbers (doubles): they travel as 20-digit zero-padded decimal strings and are
/// compared as two 10-digit halves, each exact as a double (and no string collation involved).
/// KEYS: highest accepted token, accepted count, rejected count. ARGV[1]: the padded token.
/// Returns 0 if rejected, else the accepted write's sequence number.
pub const FENCED_WRITE: &str = r#"
local t = ARGV[1]
if string.len(t) ~= 20 or not string.match(t, '^%d+$') then
  return redis.error_reply('token must be 20 decimal digits')
end
local max = redis.call('GET', KEYS[1])
if max then
  local th, tl = tonumber(string.sub(t, 1, 10)), tonumber(string.sub(t, 11, 20))
  local mh, ml = tonumber(string.sub(max, 1, 10)), tonumber(string.sub(max, 11, 20))
  if th < mh or (th == mh and tl < ml) then
    redis.call('INCR', KEYS[3])
    return 0
  end
end
redis.call('SET', KEYS[1], t)
return redis.call('INCR', KEYS[2])
"#;

/// The fenced store's keys for `resource`: highest token, accepted count, rejected count.
pub fn fence_keys(resource: &str) -> [String; 3] {
    ["max", "accepted", "rejected"].map(|k| format!("fence:{resource}:{k}"))
}

/// `token` as the store keeps it: 20 decimal digits, zero-padded (u64::MAX has 20).
pub fn pad_token(token: u64) -> String {
    format!("{token:020}")
}
