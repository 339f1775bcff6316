//! The protected resource: a counter on a separate "storage" redis-server, read and written back with a
//! pause in between (Jepsen's lock workload). If two holders ever interleave, an increment is lost.
//! Deliberately not atomic (no INCR): the lock is the only thing keeping the read-modify-write safe.

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::resp::encode;

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
