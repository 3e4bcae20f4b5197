//! Boot template overrides: one record per template name with its text and who changed it when
//! (the defaults are not stored; see the templates module of the layer above). The table is created by the first save.

use std::collections::BTreeMap;

use super::kv::Def;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::store::{decode, encode};
use super::{Cmdb, CmdbError};

pub(super) const TEMPLATES: Def<&str, &[u8]> = Def::new("templates");

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
    /// Every stored override; a record that does not decode is skipped with a warning (boots
    /// then use that template's default) rather than keeping the appliance from starting.
    pub async fn template_override_list(&self) -> Result<Vec<TemplateOverride>, CmdbError> {
        self.read(|rtx| {
            let Some(t) = rtx.open_table_if_any(TEMPLATES)? else { return Ok(Vec::new()) };
            let mut out = Vec::new();
            for row in t.iter()? {
                let (k, v) = row?;
                match decode::<TemplateOverride>(v.value()) {
                    Ok(o) => out.push(o),
                    Err(e) => tracing::warn!(template = k.value(), error = %e, "skipping a template override"),
                }
            }
            Ok(out)
        })
        .await
    }

    /// Every stored override's text, by template name.
    pub async fn template_overrides(&self) -> Result<BTreeMap<String, String>, CmdbError> {
        Ok(self.template_override_list().await?.into_iter().map(|o| (o.name, o.text)).collect())
    }

    /// The override of template `name`, if there is one.
    pub async fn template_override(&self, name: String) -> Result<Option<TemplateOverride>, CmdbError> {
        self.read(move |rtx| match rtx.open_table_if_any(TEMPLATES)? {
            Some(t) => t.get(name.as_str())?.map(|v| decode(v.value())).transpose(),
            None => Ok(None),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, text: &str) -> TemplateOverride {
        TemplateOverride { name: name.into(), text: text.into(), changed_by: "ada".into(), changed_at: 7 }
    }

    #[tokio::test]
    async fn overrides_are_stored_replaced_and_deleted_and_a_corrupt_one_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let cmdb = Cmdb::open_for_test(&dir.path().join("c.redb"), 8).unwrap();
        assert!(cmdb.template_overrides().await.unwrap().is_empty(), "no table yet reads as none");
        assert_eq!(cmdb.template_override("preseed".into()).await.unwrap(), None);
        cmdb.put_template_override(rec("preseed", "a")).await.unwrap();
        cmdb.put_template_override(rec("preseed", "b")).await.unwrap();
        assert_eq!(cmdb.template_override("preseed".into()).await.unwrap(), Some(rec("preseed", "b")));
        cmdb.write(|ctx| {
            ctx.t.tx.open_table(TEMPLATES)?.insert("kickstart", b"[\"not a record\"]".as_slice())?;
            Ok(())
        })
        .await
        .unwrap();
        let all = cmdb.template_overrides().await.unwrap();
        assert_eq!(all.into_iter().collect::<Vec<_>>(), [("preseed".to_string(), "b".to_string())]);
        assert!(cmdb.delete_template_override("preseed".into()).await.unwrap());
        assert!(!cmdb.delete_template_override("preseed".into()).await.unwrap());
    }
}
