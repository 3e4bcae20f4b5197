//! cloud-init user-data of a machine or a rack through the REST API: shown, set from a file, or
//! removed. The text goes in the request body only, never on the command line.

use super::*;

/// Shows the user-data at `path` (`/machines/{id}/user-data` or `/racks/{name}/user-data`), or
/// sets it from `set` ('-': stdin), or removes it with `clear`.
pub(super) async fn user_data(c: &ApiClient, path: &str, set: Option<PathBuf>, clear: bool) -> anyhow::Result<()> {
    match (set, clear) {
        (Some(file), _) => {
            let text = racks::read_input(&file)?;
            c.ok(Method::PUT, path, Some(json!({"text": text}))).await?;
            println!("user-data set ({} bytes)", text.len());
        }
        (None, true) => {
            c.ok(Method::DELETE, path, None).await?;
            println!("user-data removed");
        }
        (None, false) => {
            let v = c.ok(Method::GET, path, None).await?;
            print!("{}", v["text"].as_str().unwrap_or_default());
        }
    }
    Ok(())
}
