//! Who may do what: the roles of users and tokens.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What a user (or a token) may do; each role may do everything the one before it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads only (GET/HEAD).
    Viewer,
    /// Also changes machines, tasks, jobs and profiles.
    Operator,
    /// Also manages users, every token, and settings.
    Admin,
}

impl Role {
    /// The role's name as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }
}

impl std::str::FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "viewer" => Ok(Role::Viewer),
            "operator" => Ok(Role::Operator),
            "admin" => Ok(Role::Admin),
            other => Err(format!("role {other:?} is not viewer, operator or admin")),
        }
    }
}
