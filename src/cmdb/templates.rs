//! Boot template overrides: one record per template name with its text and who changed it when
//! (the defaults are not stored; see [`crate::templates`]). The table is created by the first save.

use std::collections::BTreeMap;

use redb::TableDefinition;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::store::{decode, encode, scan};
use super::{Cmdb, CmdbError};

const TEMPLATES: TableDefinition<&str, &[u8]> = TableDefinition::new("templates");

/// An operator's text for one boot template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TemplateOverride {
    pub name: String,
    pub text: String,
    /// The user who saved it.
    pub changed_by: String,
    /// When (seconds since the Unix epoch).
    pub changed_at: u64,
}

impl Cmdb {
    /// Every stored override.
    pub async fn template_override_list(&self) -> Result<Vec<TemplateOverride>, CmdbError> {
        self.read(|rtx| match rtx.open_table(TEMPLATES) {
            Ok(t) => scan(&t),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        })
        .await
    }

    /// Every stored override's text, by template name.
    pub async fn template_overrides(&self) -> Result<BTreeMap<String, String>, CmdbError> {
        Ok(self.template_override_list().await?.into_iter().map(|o| (o.name, o.text)).collect())
    }

    /// The override of template `name`, if there is one.
    pub async fn template_override(&self, name: String) -> Result<Option<TemplateOverride>, CmdbError> {
        self.read(move |rtx| match rtx.open_table(TEMPLATES) {
            Ok(t) => t.get(name.as_str())?.map(|v| decode(v.value())).transpose(),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(e.into()),
        })
        .await
    }

    /// Stores (or replaces) an override.
    pub async fn put_template_override(&self, o: TemplateOverride) -> Result<TemplateOverride, CmdbError> {
        self.write(move |ctx| {
            ctx.t.tx.open_table(TEMPLATES)?.insert(o.name.as_str(), encode(&o).as_slice())?;
            Ok(o)
        })
        .await
    }

    /// Deletes the override of `name`; whether there was one.
    pub async fn delete_template_override(&self, name: String) -> Result<bool, CmdbError> {
        self.write(move |ctx| Ok(ctx.t.tx.open_table(TEMPLATES)?.remove(name.as_str())?.is_some())).await
    }
}
