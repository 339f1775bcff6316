//! What a connection's handshake learns of its node's server ([`Server`]: its name and version,
//! from `INFO server`), and the [`Profile`] the connection renders every operation with: the
//! per-node command seam. A kind names an operation (a [`Cmd`]: its release, its extend, ...); each
//! connection turns it into the command its server takes, so servers that offer a native form of an
//! operation get it (`crate::protocol::native`: Valkey 9's `DELIFEQ` and `SET ... IFEQ ... GET`,
//! read back as the scripts' answers) while the others keep the script.

use std::time::Duration;

use super::cmd::Cmd;
use super::native::Native;
use crate::algo::quarantine::ServerIdentity;

/// Which server a node runs, as `INFO server` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum ServerName {
    /// Redis (no `server_name` field, or `server_name:redis`).
    #[default]
    Redis,
    /// Valkey (`server_name:valkey`; its `redis_version` is a compatibility figure, its own version
    /// is `valkey_version`).
    Valkey,
    /// Another server that answers `INFO` in this form.
    Other,
}

/// A node's server: name and version (`(major, minor, patch)`; `None` if it did not say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Server {
    pub(crate) name: ServerName,
    pub(crate) version: Option<(u16, u16, u16)>,
}

/// What `INFO server` told a handshake: the identity quarantine needs and the server behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Info {
    pub(crate) identity: ServerIdentity,
    pub(crate) server: Server,
    /// Whether the lock user may run scripts: `false` when the handshake's `SCRIPT LOAD` was
    /// refused with `NOPERM` (an ACL user without `@scripting`) and the server's native commands
    /// were found usable instead (the handshake fails otherwise).
    pub(crate) scripting: bool,
    /// Whether the server's native lock commands are allowed to the lock user (probed where the
    /// server has them; `false`: the scripts are used, as on other servers).
    pub(crate) native_allowed: bool,
}

/// How a connection renders operations into commands. Small and `Copy`: the fan-out compares
/// nodes' profiles to encode a round once per profile, not once per node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub(crate) enum Profile {
    /// Every operation as the scripts (`EVALSHA`, `SET NX PX`).
    #[default]
    Scripts = 0,
    /// The shared single-key release, extend, waiter mark and coalesced extend as native commands
    /// (`DELIFEQ`, `SET ... IFEQ ... GET PX`; see `crate::protocol::native`), everything else as
    /// scripts. Valkey 9.0 and later. Releases are not coalesced into `RELEASE_MANY` on it: the
    /// native commands cost the server less per lock (measured, `results/2026-12-01/native/`).
    Native = 1,
    /// [`Self::Native`] on a node whose lock user may not run scripts (no `@scripting`): the
    /// operations with a native form work, and the engine refuses at once a kind that needs a
    /// script there (`crate::protocol::native::covers`), before anything is sent.
    NativeOnly = 2,
}

impl Profile {
    /// The profile stored as `code` (see [`Self::code`]); an unknown code is the scripts'.
    pub(crate) fn from_code(code: u8) -> Self {
        match code {
            1 => Self::Native,
            2 => Self::NativeOnly,
            _ => Self::Scripts,
        }
    }

    /// This profile as one byte, for connections that keep it in an atomic.
    pub(crate) fn code(self) -> u8 {
        self as u8
    }

    /// The profile for a connection whose server is `server` (`None`: the handshake did not ask);
    /// `native: false` keeps every server on the scripts (`Config::native_commands`).
    ///
    /// Valkey got `SET ... IFEQ` in 8.1 and `DELIFEQ` in 9.0; only servers with both get native
    /// commands (a Valkey 8.1 node keeps the scripts). Redis 8.4's `DELEX ... IFEQ` is not used
    /// yet: no such server is tested here.
    pub(crate) fn of(server: Option<&Server>, native: bool) -> Self {
        match server {
            Some(Server {
                name: ServerName::Valkey,
                version: Some(version),
            }) if native && *version >= (9, 0, 0) => Self::Native,
            _ => Self::Scripts,
        }
    }

    /// Operation `op`'s native form on this profile, if it has one; `None`: `op` is sent as it is.
    pub(crate) fn native(&self, op: &Cmd) -> Option<Native> {
        match self {
            Self::Scripts => None,
            Self::Native => Native::of(op),
            Self::NativeOnly => Native::of(op).or_else(|| Native::without_scripts(op)),
        }
    }

    /// The profile for a connection whose handshake told `info` (see [`Self::of`]): the scripts
    /// where native commands are refused to the lock user, [`Self::NativeOnly`] where scripts are.
    pub(crate) fn for_info(info: Option<&Info>, native: bool) -> Self {
        let profile = Self::of(info.map(|i| &i.server), native);
        match info {
            Some(i) if !i.native_allowed => Self::Scripts,
            Some(i) if !i.scripting => profile.without_scripts().unwrap_or(profile),
            _ => profile,
        }
    }

    /// This profile for a lock user without scripting: [`Self::NativeOnly`] where native commands
    /// are rendered, `None` where every operation would need a script.
    pub(crate) fn without_scripts(self) -> Option<Self> {
        match self {
            Self::Native | Self::NativeOnly => Some(Self::NativeOnly),
            Self::Scripts => None,
        }
    }

    /// Whether releases queued back to back on a connection of this profile are coalesced into one
    /// `RELEASE_MANY` call: on the scripts only (see [`Self::Native`]).
    pub(crate) fn coalesces_releases(&self) -> bool {
        *self == Self::Scripts
    }
}

/// Reads `run_id`, `uptime_in_seconds`, the server's name and version out of an `INFO server`
/// reply.
pub(crate) fn parse_info(text: &[u8]) -> Option<Info> {
    let text = std::str::from_utf8(text).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.trim_end().strip_prefix(name)?.strip_prefix(':'))
    };
    // Negative when the node's wall clock was stepped back past its start time: its age is then
    // unknown, so it counts as just started (the longest quarantine) rather than failing the
    // handshake, which would keep the node out for as long as its clock stays behind.
    let uptime: i64 = field("uptime_in_seconds")?.parse().ok()?;
    let identity = ServerIdentity {
        run_id: field("run_id")?.to_string(),
        uptime: Duration::from_secs(uptime.max(0) as u64),
        durable: false,
    };
    let (name, version) = match field("server_name") {
        Some("valkey") => (ServerName::Valkey, field("valkey_version")),
        None | Some("redis") => (ServerName::Redis, field("redis_version")),
        Some(_) => (ServerName::Other, field("redis_version")),
    };
    let version = version.and_then(|v| {
        let mut parts = v.split('.').map(|p| p.parse::<u16>().ok());
        Some((
            parts.next()??,
            parts.next()??,
            parts.next().flatten().unwrap_or(0),
        ))
    });
    let server = Server { name, version };
    Some(Info {
        identity,
        server,
        scripting: true,
        native_allowed: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_names_the_server_and_its_version() {
        let redis = b"# Server\r\nredis_version:7.0.15\r\nrun_id:abc\r\nuptime_in_seconds:5\r\n";
        let info = parse_info(redis).unwrap();
        assert_eq!(info.identity.run_id, "abc");
        assert_eq!(info.server.name, ServerName::Redis);
        assert_eq!(info.server.version, Some((7, 0, 15)));
        let valkey = b"redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n\
run_id:x\r\nuptime_in_seconds:1\r\n";
        let info = parse_info(valkey).unwrap();
        assert_eq!(info.server.name, ServerName::Valkey);
        assert_eq!(info.server.version, Some((9, 1, 2)));
        assert!(
            parse_info(b"redis_version:7.0.0\r\n").is_none(),
            "no run_id"
        );
    }

    #[test]
    fn only_valkey_9_gets_native_commands() {
        let server = |name, version| Server {
            name,
            version: Some(version),
        };
        let valkey9 = server(ServerName::Valkey, (9, 1, 2));
        assert_eq!(Profile::of(Some(&valkey9), true), Profile::Native);
        assert_eq!(Profile::of(Some(&valkey9), false), Profile::Scripts);
        let valkey8 = server(ServerName::Valkey, (8, 1, 0));
        assert_eq!(Profile::of(Some(&valkey8), true), Profile::Scripts);
        let redis = server(ServerName::Redis, (9, 0, 0));
        assert_eq!(Profile::of(Some(&redis), true), Profile::Scripts);
        assert_eq!(Profile::of(None, true), Profile::Scripts);
        assert_eq!(Profile::Native.without_scripts(), Some(Profile::NativeOnly));
        let info = |scripting, native_allowed| Info {
            identity: ServerIdentity {
                run_id: "r".into(),
                uptime: Duration::ZERO,
                durable: false,
            },
            server: valkey9,
            scripting,
            native_allowed,
        };
        let of = |i: Info| Profile::for_info(Some(&i), true);
        assert_eq!(of(info(true, true)), Profile::Native);
        assert_eq!(of(info(false, true)), Profile::NativeOnly);
        assert_eq!(of(info(true, false)), Profile::Scripts, "DELIFEQ refused");
        assert_eq!(Profile::Scripts.without_scripts(), None);
        for p in [Profile::Scripts, Profile::Native, Profile::NativeOnly] {
            assert_eq!(Profile::from_code(p.code()), p);
        }
    }

    #[test]
    fn parses_run_id_and_uptime() {
        let id = |run_id: &str, uptime_s: u64| ServerIdentity {
            run_id: run_id.into(),
            uptime: Duration::from_secs(uptime_s),
            durable: false,
        };
        let identity = |text: &[u8]| parse_info(text).map(|i| i.identity);
        let info = b"# Server\r\nredis_version:7.0.15\r\nrun_id:abc123\r\ntcp_port:7001\r\nuptime_in_seconds:42\r\n";
        assert_eq!(identity(info), Some(id("abc123", 42)));
        assert_eq!(identity(b"# Server\r\nredis_version:7\r\n"), None);
        let stepped_back = b"run_id:abc123\r\nuptime_in_seconds:-3599\r\n";
        assert_eq!(
            identity(stepped_back),
            Some(id("abc123", 0)),
            "age unknown: youngest"
        );
        assert_eq!(identity(b"run_id:a\r\nuptime_in_seconds:x\r\n"), None);
    }
}
