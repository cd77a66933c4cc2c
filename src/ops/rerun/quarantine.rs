//! An archive's images in quarantine: each `images/<name>.tar` is read completely and checked before
//! anything is loaded (`images::saved`), and what the Engine loads is a copy whose only tag is one
//! in a namespace no build ever looks in ([`quarantine_tag`]), held by an
//! [`ImageGuard`](crate::engine::ImageGuard) that removes it again.

use std::path::Path;

use anyhow::{Context, Result, ensure};

use crate::engine::ImageGuard;
use crate::images::{BuiltImage, namespace, saved};

/// Hex digits of the archive's sha256 in its quarantine namespace.
const ARCHIVE_DIGITS: usize = 12;

/// The tag an archive's image `name`, tagged `tag` in the archive's manifest, is loaded under:
/// `<namespace>-rerun/<first 12 hex digits of the archive's sha256>/<name>:<tag's part after ':'>`.
/// No build reuses a tag there, and the archive chooses none of it but two checked names.
pub fn quarantine_tag(archive_sha256: &str, name: &str, tag: &str) -> Result<String> {
    ensure!(
        is_name(name),
        "the archive's manifest names an image {name:?}: not a name the kit gives its images \
         (lowercase letters, digits, '.', '_' and '-'); the archive was altered"
    );
    let version = tag
        .rsplit_once(':')
        .map(|(_, v)| v)
        .filter(|v| is_version(v))
        .with_context(|| {
            format!(
                "the archive's manifest tags the image {name} {tag:?}: not a tag the kit writes \
                 (`<namespace>/<name>:<hash>`); the archive was altered"
            )
        })?;
    let digits = archive_sha256
        .get(..ARCHIVE_DIGITS)
        .context("the archive's sha256 is too short")?;
    Ok(format!("{}-rerun/{digits}/{name}:{version}", namespace()))
}

/// Loads the archive's `image` from `file` into `guard` under `tag`, its quarantine tag. The file
/// must hold one image and nothing the Engine's save format does not, and name exactly the tag the
/// archive's manifest gives it; the Engine loads a copy (written into `scratch`) that names `tag`
/// alone. A tag the load set besides it is removed again and refuses the image.
pub async fn load(
    guard: &mut ImageGuard,
    file: &Path,
    image: &BuiltImage,
    tag: &str,
    scratch: &Path,
) -> Result<()> {
    let copy = scratch.join(format!("{}.tar", image.name));
    let (from, to, name, wanted, quarantine) = (
        file.to_owned(),
        copy.clone(),
        image.name.clone(),
        image.tag.clone(),
        tag.to_string(),
    );
    // Reading and copying hundreds of megabytes is blocking work.
    let saved = tokio::task::spawn_blocking(move || {
        let saved = saved::quarantine(&from, &quarantine, &to)?;
        check_saved_tags(&name, &wanted, &saved.tags).inspect_err(|_| {
            let _ = std::fs::remove_file(&to);
        })?;
        Ok::<_, anyhow::Error>(saved)
    })
    .await
    .context("checking an image file of the archive")??;
    let added = guard
        .load(&copy, tag, &format!("sha256:{}", saved.id))
        .await?;
    std::fs::remove_file(&copy).with_context(|| format!("removing {}", copy.display()))?;
    ensure!(
        added.is_empty(),
        "images/{}.tar: loading it set or moved {} besides {tag}; they were removed again (with \
         force; a moved tag was set back on its image). Refused: loading an archive's image must \
         add no other image and move no other tag",
        image.name,
        added.join(", ")
    );
    Ok(())
}

/// Refuses an exported image that names any tag but `tag` (or none): the tag inside the file must
/// be the one the archive's manifest names, as it is or as Podman saves it (`docker.io/<tag>`,
/// `localhost/<tag>`).
pub fn check_saved_tags(name: &str, tag: &str, tags: &[String]) -> Result<()> {
    let as_saved = [
        tag.to_string(),
        format!("docker.io/{tag}"),
        format!("localhost/{tag}"),
    ];
    ensure!(
        tags.len() == 1 && as_saved.contains(&tags[0]),
        "images/{name}.tar names the tag(s) [{}], but the archive's manifest names only {tag}: \
         refused, the archive was altered",
        tags.join(", ")
    );
    Ok(())
}

/// A name the kit gives an image: lowercase letters, digits and `.`, `_`, `-`, starting and ending
/// with a letter or digit (also a file name with no path in it).
fn is_name(name: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    name.len() <= 128
        && name.starts_with(alnum)
        && name.ends_with(alnum)
        && name
            .chars()
            .all(|c| alnum(c) || matches!(c, '.' | '_' | '-'))
}

/// The part after ':' of a tag the Engine accepts: a word character, then up to 127 word
/// characters, `.` or `-`.
fn is_version(version: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    version.len() <= 128
        && version.starts_with(word)
        && version.chars().all(|c| word(c) || matches!(c, '.' | '-'))
}
