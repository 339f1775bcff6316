//! What a connection's handshake learns of its node's server ([`Server`]: its name and version,
//! from `INFO server`), its [`Dialect`], and the [`Profile`] the connection renders every operation
//! with ([`Profile::render`]: the per-node command seam, the one place a wire form is chosen). A
//! kind names an operation (a [`Cmd`] whose script says which [`super::cmd::Op`] it performs: a
//! release, an extend, ...); each connection turns it into the command its server takes, so servers
//! that offer a native form of an operation get it (`crate::protocol::native`: Valkey 9's `DELIFEQ`
//! and `SET ... IFEQ ... GET`, read back as the scripts' answers) while the others keep the script.

use std::time::Duration;

use bytes::Bytes;

use super::cmd::{script_cmd, Args, Cmd, Keys};
use super::native::Native;
use super::scripts::RELEASE_NOTIFY;
use crate::algo::quarantine::ServerIdentity;
use crate::algo::value::LockValue;

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

/// A server's dialect: which of the shared operations (`super::cmd::Op`) it takes in a native
/// form. Adding one is an arm here, its forms beside `super::native`'s and a test: [`Dialect::of`]
/// says which servers speak it, [`Profile::render`] reaches its forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub(crate) enum Dialect {
    /// Every operation as its script (`EVALSHA`, `SET NX PX`): Redis, Valkey before 9, and any
    /// server not known to have the native forms.
    #[default]
    Scripts = 0,
    /// Valkey 9.0 and later: the shared single-key release, extend, waiter mark and coalesced
    /// extend as `DELIFEQ` and `SET ... IFEQ ... GET PX` (`crate::protocol::native`), and, for a
    /// lock user without scripting, the plain lock's hand-off too. Releases are not coalesced into
    /// `RELEASE_MANY` there: the native commands cost the server less per lock (measured on Valkey
    /// 9.1.2, see the repository's `results/README.md`).
    Valkey9 = 1,
}

impl Dialect {
    /// The dialect of `server` (`None`: the handshake did not ask); `native: false` keeps every
    /// server on the scripts (`Config::native_commands`).
    ///
    /// Valkey got `SET ... IFEQ` in 8.1 and `DELIFEQ` in 9.0; only servers with both get native
    /// commands (a Valkey 8.1 node keeps the scripts). Redis 8.4's `DELEX ... IFEQ` is not used
    /// yet: no such server is tested here.
    pub(crate) fn of(server: Option<&Server>, native: bool) -> Self {
        match server {
            Some(Server {
                name: ServerName::Valkey,
                version: Some(version),
            }) if native && *version >= (9, 0, 0) => Self::Valkey9,
            _ => Self::Scripts,
        }
    }

    /// `cmd`'s native form in this dialect, if it has one; `scripting: false` adds the forms of
    /// the operations a user without scripting needs (the plain lock's hand-off).
    fn form(self, cmd: &Cmd, scripting: bool) -> Option<Native> {
        match self {
            Self::Scripts => None,
            Self::Valkey9 => Native::of(cmd).or_else(|| match scripting {
                true => None,
                false => Native::without_scripts(cmd),
            }),
        }
    }
}

/// How a connection renders operations: its server's [`Dialect`] and whether its lock user may
/// run scripts. One per connection, learned at the handshake. Small and `Copy`: the fan-out
/// renders a round once per profile, not once per node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Profile {
    pub(crate) dialect: Dialect,
    /// `false` for a lock user without `@scripting` on a server whose native forms serve the plain
    /// lock: the engine refuses at once a kind that needs a script there
    /// (`crate::protocol::native::covers`), before anything is sent.
    pub(crate) scripting: bool,
}

impl Default for Profile {
    fn default() -> Self {
        Self {
            dialect: Dialect::Scripts,
            scripting: true,
        }
    }
}

impl Profile {
    /// The one place an operation's wire form is chosen: `cmd`'s native form on this connection,
    /// or `None` to send it as it is (its script, or `SET NX PX`).
    pub(crate) fn render(&self, cmd: &Cmd) -> Option<Native> {
        self.dialect.form(cmd, self.scripting)
    }

    /// What a connection sends to learn whether its user may use the native forms: the native
    /// form of a waking release of `key` (each command of it must be allowed, for a lock taken to
    /// be released), `None` in a dialect without one.
    pub(crate) fn probe(dialect: Dialect, key: Bytes) -> Option<Native> {
        let release = script_cmd(
            &RELEASE_NOTIFY,
            &Keys::One(key),
            LockValue::ZERO,
            Args::NONE,
        );
        dialect.form(&release, true)
    }

    /// The profile stored as `code` (see [`Self::code`]); an unknown code is the default.
    pub(crate) fn from_code(code: u8) -> Self {
        let dialect = match code & 0x7f {
            1 => Dialect::Valkey9,
            _ => Dialect::Scripts,
        };
        Self {
            dialect,
            scripting: code & 0x80 == 0,
        }
    }

    /// This profile as one byte, for connections that keep it in an atomic.
    pub(crate) fn code(self) -> u8 {
        self.dialect as u8 | if self.scripting { 0 } else { 0x80 }
    }

    /// The profile for a connection whose handshake told `info`: its server's dialect, unless the
    /// native commands are refused to the lock user (the scripts then), and without scripting
    /// where the user may not run scripts (the handshake fails where nothing would serve).
    pub(crate) fn for_info(info: Option<&Info>, native: bool) -> Self {
        let dialect = Dialect::of(info.map(|i| &i.server), native);
        match info {
            Some(i) if !i.native_allowed => Self::default(),
            Some(i) if !i.scripting && dialect != Dialect::Scripts => Self {
                dialect,
                scripting: false,
            },
            _ => Self {
                dialect,
                scripting: true,
            },
        }
    }

    /// Whether releases queued back to back on a connection of this profile are coalesced into one
    /// `RELEASE_MANY` call: in the scripts' dialect only (see [`Dialect::Valkey9`]).
    pub(crate) fn coalesces_releases(&self) -> bool {
        self.dialect == Dialect::Scripts
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
        assert_eq!(Dialect::of(Some(&valkey9), true), Dialect::Valkey9);
        assert_eq!(Dialect::of(Some(&valkey9), false), Dialect::Scripts);
        let valkey8 = server(ServerName::Valkey, (8, 1, 0));
        assert_eq!(Dialect::of(Some(&valkey8), true), Dialect::Scripts);
        let redis = server(ServerName::Redis, (9, 0, 0));
        assert_eq!(Dialect::of(Some(&redis), true), Dialect::Scripts);
        assert_eq!(Dialect::of(None, true), Dialect::Scripts);
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
        let profile = |dialect, scripting| Profile { dialect, scripting };
        assert_eq!(of(info(true, true)), profile(Dialect::Valkey9, true));
        assert_eq!(of(info(false, true)), profile(Dialect::Valkey9, false));
        assert_eq!(of(info(true, false)), Profile::default(), "DELIFEQ refused");
        for p in [
            Profile::default(),
            profile(Dialect::Valkey9, true),
            profile(Dialect::Valkey9, false),
        ] {
            assert_eq!(Profile::from_code(p.code()), p);
        }
    }

    /// The probe is the native release itself, so a user allowed the probe can release.
    #[test]
    fn the_probe_is_what_a_release_sends() {
        assert!(Profile::probe(Dialect::Scripts, Bytes::from_static(b"k")).is_none());
        let probe = Profile::probe(Dialect::Valkey9, Bytes::from_static(b"k")).unwrap();
        let mut sent = Vec::new();
        probe.commands(|args| sent.push(args[0].to_vec()));
        assert_eq!(sent, [b"DELIFEQ".to_vec(), b"EXISTS".to_vec()]);
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
