//! cloud-init user-data, kept apart from the records it belongs to (`machine:<id>`,
//! `rack:<name>`, `task:<id>`), so no listing, event or page of a machine, rack or task carries
//! it: only `GET .../user-data` (an operator's) and the machine's own NoCloud fetch read it.
//! The table is created by the first save.

use serde::{Deserialize, Serialize};

use super::kv::Def;
use super::store::{decode, encode};
use super::{now_secs, Cmdb, CmdbError};

pub(super) const USER_DATA: Def<&str, &[u8]> = Def::new("user_data");

/// Whose user-data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    Machine(u64),
    Rack(String),
    Task(u64),
}

impl Owner {
    fn key(&self) -> String {
        match self {
            Owner::Machine(id) => format!("machine:{id}"),
            Owner::Rack(name) => format!("rack:{name}"),
            Owner::Task(id) => format!("task:{id}"),
        }
    }
}

/// Stored user-data and when it was saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserData {
    pub text: String,
    /// Unix seconds.
    pub changed_at: u64,
}

/// Stores `owner`'s user-data inside a write (a task's, with the task).
pub(super) fn put_in(ctx: &mut super::store::WriteCtx<'_>, owner: &Owner, text: String) -> Result<(), CmdbError> {
    let value = encode(&UserData { text, changed_at: now_secs() });
    ctx.t.tx.open_table(USER_DATA)?.insert(owner.key().as_str(), value.as_slice())?;
    Ok(())
}

/// Removes `owner`'s user-data inside a write (a machine's goes with the machine).
pub(super) fn remove_in(ctx: &mut super::store::WriteCtx<'_>, owner: &Owner) -> Result<(), CmdbError> {
    ctx.t.tx.open_table(USER_DATA)?.remove(owner.key().as_str())?;
    Ok(())
}

impl Cmdb {
    /// The user-data of `owner`, if any.
    pub async fn user_data(&self, owner: Owner) -> Result<Option<UserData>, CmdbError> {
        let key = owner.key();
        self.read(move |rtx| match rtx.open_table_if_any(USER_DATA)? {
            Some(t) => t.get(key.as_str())?.map(|v| decode(v.value())).transpose(),
            None => Ok(None),
        })
        .await
    }

    /// Stores (`Some`) or removes (`None`) the user-data of `owner` (checked by the caller);
    /// whether there was some before.
    pub async fn set_user_data(&self, owner: Owner, text: Option<String>) -> Result<bool, CmdbError> {
        let key = owner.key();
        self.write(move |ctx| {
            let mut t = ctx.t.tx.open_table(USER_DATA)?;
            let before = t.get(key.as_str())?.is_some();
            match text {
                Some(text) => t.insert(key.as_str(), encode(&UserData { text, changed_at: now_secs() }).as_slice())?,
                None => {
                    t.remove(key.as_str())?;
                }
            }
            Ok(before)
        })
        .await
    }
}
