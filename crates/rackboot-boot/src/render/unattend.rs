//! The Windows Setup answer file (`windows/unattend.xml`, editable as `unattend`): XML, so the
//! environment escapes every value (the template's name ends in `.xml`).

use serde::Serialize;

use super::{val, RenderError, Renderer};

/// Longest name Windows takes as a computer name (NetBIOS).
pub const MAX_COMPUTER_NAME: usize = 15;

/// What the answer file of one machine needs.
#[derive(Debug, Clone, Serialize)]
pub struct UnattendVars {
    pub mac: String,
    /// The machine's hostname as Windows' computer name.
    pub computer_name: String,
    /// The imported media Setup runs from.
    pub media: String,
    /// The appliance's address: the share is `\\<share_address>\rackboot`.
    pub share_address: String,
}

impl UnattendVars {
    /// A made-up machine for checks and previews.
    pub fn sample() -> UnattendVars {
        UnattendVars {
            mac: "52:54:00:00:00:00".into(),
            computer_name: "sample".into(),
            media: "sample".into(),
            share_address: "198.18.0.1".into(),
        }
    }
}

impl Renderer {
    /// Renders a machine's `unattend.xml`; a computer name Windows would refuse is an error
    /// here rather than a Setup that stops half-way.
    pub fn unattend(&self, vars: &UnattendVars) -> Result<String, RenderError> {
        let name = &vars.computer_name;
        let digits_only = name.bytes().all(|b| b.is_ascii_digit());
        if name.is_empty()
            || name.len() > MAX_COMPUTER_NAME
            || !rackboot_model::records::valid_hostname(name)
            || digits_only
        {
            return Err(RenderError::Unsafe(format!(
                "computer name {name}: Windows takes 1-{MAX_COMPUTER_NAME} letters, digits and '-', not digits only"
            )));
        }
        self.render("windows/unattend.xml", val(vars))
    }
}
