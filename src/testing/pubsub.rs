//! `PUBLISH`, the pub/sub command a script can call (`SUBSCRIBE` and `UNSUBSCRIBE` belong to the
//! connection: `super::conn`).

use bytes::Bytes;

use super::db::Db;
use super::reply::Reply;

/// `PUBLISH channel message`: the number of subscribers it reached.
pub(crate) fn publish(db: &mut Db, args: &[Bytes]) -> Reply {
    Reply::Int(db.channels.publish(&args[1], &args[2]) as i64)
}
