//! The one reading of a tar that arrives from elsewhere: a run archive, or an image file inside one.
//! Every reader of such a tar (`check`, `verify`, `rerun`, `merge`, `compare`, `report`) goes through
//! [`read`], so that what the kit checks is what GNU tar, bsdtar and Python's tarfile would extract.
//!
//! Tools disagree where the format leaves room: a GNU long name and a PAX `path` naming one member
//! twice, a PAX `size` that moves where the next header starts, a directory whose data some skip and
//! others read as headers, bytes where a ustar header keeps a name prefix, extension headers read
//! whole into memory, members after the end-of-archive marker. [`read`] refuses all of these:
//!
//! - extension headers are GNU long names (`L`) and link names (`K`) and PAX local headers (`x`), at
//!   most one of each before a member and each at most [`EXTENSION_MAX`] bytes; PAX records may only
//!   carry [`PAX_KEYS`] (never `path`, `linkpath` or `size`: the kit's writer makes none, and the
//!   Engine's save format needs none); global headers, sparse files and other types are refused;
//! - a member's name is its long name, or the header's (with the ustar prefix): a long name must
//!   begin with the header's own, neither may hold a NUL or a backslash, and a header of another
//!   format must leave the prefix field empty;
//! - the size field is plain octal (or base-256); folders, links, devices and fifos have no data;
//! - after the end-of-archive marker only zeros may follow;
//! - at most [`MEMBERS_MAX`] members and [`NAMES_MAX`] bytes of names, so that what a caller keeps
//!   per member stays bounded.

use std::io::{self, Read};

use anyhow::{Result, bail, ensure};
use tar::{EntryType, Header};

/// The largest extension header (a long name, a long link name, a PAX header) read, bytes.
pub const EXTENSION_MAX: u64 = 4 << 10;
/// The most members one tar may hold (a run archive holds a few hundred, a few thousand with
/// vendored sources).
pub const MEMBERS_MAX: usize = 100_000;
/// The most bytes of member names and link targets one tar may hold, all members together.
pub const NAMES_MAX: usize = 16 << 20;
/// The PAX keys a member may carry: none changes its name, its link target or where its data ends.
pub const PAX_KEYS: [&str; 8] = [
    "mtime", "atime", "ctime", "uid", "gid", "uname", "gname", "comment",
];
/// PAX key prefixes a member may carry (extended attributes).
const PAX_PREFIXES: [&str; 2] = ["SCHILY.xattr.", "LIBARCHIVE.xattr."];

/// What the tools agree on.
const AGREE: &str = "tar readers could see different members in it; refused";

/// One member, as every tool reads it.
pub struct Member<'e> {
    /// Its name, as stored (a folder's may end in `/`).
    pub path: String,
    pub kind: EntryType,
    /// A symlink's or hard link's target.
    pub link: Option<String>,
    /// Permission bits.
    pub mode: u32,
    /// Bytes of data (0 but for regular files).
    pub size: u64,
    /// Its data, exactly `size` bytes.
    pub data: &'e mut dyn Read,
}

/// Reads every member of the tar `input` in order, handing each to `visit`, and returns `input`
/// read to its end. An error from `input` stays an [`io::Error`] (a damaged stream); a refusal is
/// a message naming the member.
pub fn read<R: Read>(input: R, mut visit: impl FnMut(Member<'_>) -> Result<()>) -> Result<R> {
    let mut archive = tar::Archive::new(input);
    {
        let mut pending = Pending::default();
        let (mut members, mut names) = (0usize, 0usize);
        for entry in archive.entries()?.raw(true) {
            let mut entry = entry?;
            let header = entry.header().clone();
            let size = strict_size(&header)?;
            match header.entry_type() {
                EntryType::GNULongName => {
                    let name = long_name(&mut entry, size, "GNU long name")?;
                    ensure!(
                        pending.name.replace(name).is_none(),
                        "two GNU long names before one member: {AGREE}"
                    );
                }
                EntryType::GNULongLink => {
                    let name = long_name(&mut entry, size, "GNU long link name")?;
                    ensure!(
                        pending.link.replace(name).is_none(),
                        "two GNU long link names before one member: {AGREE}"
                    );
                }
                EntryType::XHeader => {
                    let data = extension(&mut entry, size, "PAX header")?;
                    pax(&data)?;
                    ensure!(
                        !std::mem::replace(&mut pending.pax, true),
                        "two PAX headers before one member: {AGREE}"
                    );
                }
                kind @ (EntryType::Regular
                | EntryType::Directory
                | EntryType::Symlink
                | EntryType::Link
                | EntryType::Char
                | EntryType::Block
                | EntryType::Fifo) => {
                    let taken = std::mem::take(&mut pending);
                    let (path, link) = taken.names(&header, kind, size)?;
                    members += 1;
                    names += path.len() + link.as_ref().map_or(0, String::len);
                    ensure!(
                        members <= MEMBERS_MAX && names <= NAMES_MAX,
                        "more than {MEMBERS_MAX} members or {NAMES_MAX} bytes of names: not an \
                         archive the kit writes; refused"
                    );
                    visit(Member {
                        path,
                        kind,
                        link,
                        mode: header.mode()? & 0o7777,
                        size,
                        data: &mut entry,
                    })?;
                }
                other => bail!(
                    "{}: tar entry type {other:?} (`{}`): not one the kit reads; refused",
                    shown(&header_name(&header)?),
                    header.as_bytes()[156].escape_ascii()
                ),
            }
        }
        ensure!(
            pending.is_empty(),
            "an extension header with no member after it: {AGREE}"
        );
    }
    let mut rest = archive.into_inner();
    ensure!(
        only_zeros(&mut rest)?,
        "data after the end of the tar archive (its end-of-archive marker): a reader that goes on \
         past it would see members the check did not; refused"
    );
    Ok(rest)
}

/// Extension headers seen since the last member.
#[derive(Default)]
struct Pending {
    name: Option<String>,
    link: Option<String>,
    pax: bool,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.name.is_none() && self.link.is_none() && !self.pax
    }

    /// The member's name and link target, from its header and the extensions before it.
    fn names(
        self,
        header: &Header,
        kind: EntryType,
        size: u64,
    ) -> Result<(String, Option<String>)> {
        let own = header_name(header)?;
        let path = match self.name {
            Some(long) => {
                ensure!(
                    long.as_bytes().starts_with(&own),
                    "{}: its GNU long name and its header name ({}) disagree: {AGREE}",
                    shown(long.as_bytes()),
                    shown(&own)
                );
                long
            }
            None => utf8(own, "member name")?,
        };
        ensure!(
            !path.contains('\\'),
            "{}: backslash in a member name: {AGREE}",
            shown(path.as_bytes())
        );
        let is_link = matches!(kind, EntryType::Symlink | EntryType::Link);
        let own_link = nts(&header.as_bytes()[157..257]).to_vec();
        let link = match (self.link, is_link) {
            (Some(_), true) if own_link.is_empty() => bail!(
                "{path}: a long link name after a header whose own link field is empty (bsdtar \
                 takes it for another kind of link): {AGREE}"
            ),
            (Some(long), true) => {
                ensure!(
                    long.as_bytes().starts_with(&own_link),
                    "{path}: its GNU long link name and its header's disagree: {AGREE}"
                );
                Some(long)
            }
            (None, true) => Some(utf8(own_link, "link target")?),
            (Some(_), false) => bail!("{path}: a long link name on a {kind:?} entry: {AGREE}"),
            (None, false) => None,
        };
        ensure!(
            kind == EntryType::Regular || size == 0,
            "{path}: a {kind:?} entry with {size} bytes of data (some readers skip them, others \
             read them as headers): {AGREE}"
        );
        ensure!(
            kind == EntryType::Directory || !path.ends_with('/'),
            "{path}: a {kind:?} entry whose name ends in `/` (some readers take it for a folder): \
             {AGREE}"
        );
        Ok((path, link))
    }
}

/// The name a header itself holds: its name field, after its prefix field in a ustar header.
fn header_name(header: &Header) -> Result<Vec<u8>> {
    let bytes = header.as_bytes();
    let name = nts(&bytes[..100]);
    let prefix = nts(&bytes[345..500]);
    let full = if header.as_ustar().is_some() && !prefix.is_empty() {
        [prefix, b"/", name].concat()
    } else {
        ensure!(
            prefix.is_empty(),
            "{}: bytes in the name prefix field of a non-ustar header (Python's tarfile reads them \
             as part of the name, other readers do not): {AGREE}",
            shown(name)
        );
        name.to_vec()
    };
    ensure!(
        header.path_bytes().as_ref() == full.as_slice(),
        "{}: an ambiguous header name: {AGREE}",
        shown(&full)
    );
    Ok(full)
}

/// The size field, refused unless it is plain octal digits (optionally after spaces, then NULs or
/// spaces) or base-256 as the `tar` crate and GNU tar write it (`0x80`, three zero bytes, then the
/// size in eight bytes, at most `i64::MAX`): readers accept different odd spellings (`+7`, `0o7`,
/// `1_0`), and read other base-256 fields differently (a sign byte, bytes the `tar` crate skips).
fn strict_size(header: &Header) -> Result<u64> {
    let field = &header.as_bytes()[124..136];
    if field[0] & 0x80 != 0 {
        let value = u64::from_be_bytes(field[4..12].try_into().expect("eight bytes"));
        ensure!(
            field[0] == 0x80 && field[1..4] == [0, 0, 0] && value <= i64::MAX as u64,
            "{}: the size field {:?} is base-256 in a form readers disagree on (negative, over \
             64 bits): {AGREE}",
            shown(&header.path_bytes()),
            field.escape_ascii().to_string()
        );
        ensure!(
            header.entry_size()? == value,
            "{}: the size field is read two ways: {AGREE}",
            shown(&header.path_bytes())
        );
        return Ok(value);
    }
    let text = field.trim_ascii_start();
    let digits = text
        .iter()
        .take_while(|b| (b'0'..=b'7').contains(b))
        .count();
    let rest = &text[digits..];
    ensure!(
        digits > 0 && rest.iter().all(|&b| b == 0 || b == b' '),
        "{}: the size field {:?} is not plain octal: {AGREE}",
        shown(&header.path_bytes()),
        field.escape_ascii().to_string()
    );
    Ok(header.entry_size()?)
}

/// The data of an extension header, at most [`EXTENSION_MAX`] bytes.
fn extension(entry: &mut impl Read, size: u64, what: &str) -> Result<Vec<u8>> {
    ensure!(
        size <= EXTENSION_MAX,
        "a {what} of {size} bytes, over the {EXTENSION_MAX}-byte limit: not an archive the kit \
         writes; refused"
    );
    let mut data = Vec::with_capacity(size as usize);
    entry.take(size).read_to_end(&mut data)?;
    ensure!(
        data.len() as u64 == size,
        io::Error::new(io::ErrorKind::UnexpectedEof, format!("a {what} cut short"))
    );
    Ok(data)
}

/// A GNU long (link) name: its data up to the NULs that end it, with none inside.
fn long_name(entry: &mut impl Read, size: u64, what: &str) -> Result<String> {
    let data = extension(entry, size, what)?;
    let end = data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let name = &data[..end];
    ensure!(
        !name.is_empty() && !name.contains(&0),
        "a {what} {} that is empty or holds a NUL (readers cut it at different places): {AGREE}",
        shown(name)
    );
    utf8(name.to_vec(), what)
}

/// Checks a PAX header's records: each `<length> <key>=<value>\n`, its length exact, its key one
/// of [`PAX_KEYS`] or an extended attribute.
fn pax(mut data: &[u8]) -> Result<()> {
    while !data.is_empty() {
        let malformed = || anyhow::anyhow!("a malformed PAX record: {AGREE}");
        let space = data.iter().position(|&b| b == b' ').ok_or_else(malformed)?;
        let len: usize = std::str::from_utf8(&data[..space])
            .ok()
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse().ok())
            .ok_or_else(malformed)?;
        ensure!(
            len > space + 2 && len <= data.len() && data[len - 1] == b'\n',
            malformed()
        );
        let record = &data[space + 1..len - 1];
        let key = record
            .iter()
            .position(|&b| b == b'=')
            .map(|eq| &record[..eq])
            .ok_or_else(malformed)?;
        let key = String::from_utf8_lossy(key);
        ensure!(
            PAX_KEYS.contains(&key.as_ref()) || PAX_PREFIXES.iter().any(|p| key.starts_with(p)),
            "a PAX header sets {:?}, which the kit's writer never does (a PAX `path`, `linkpath` \
             or `size` overrides the header, and readers differ in which they take): {AGREE}",
            key.escape_debug().to_string()
        );
        data = &data[len..];
    }
    Ok(())
}

/// Reads `input` to its end; whether it held only zeros.
fn only_zeros(input: &mut impl Read) -> io::Result<bool> {
    let mut buf = [0u8; 8192];
    loop {
        match input.read(&mut buf) {
            Ok(0) => return Ok(true),
            Ok(n) if buf[..n].iter().any(|&b| b != 0) => return Ok(false),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// A NUL-terminated field: the bytes before its first NUL.
fn nts(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    &field[..end]
}

fn utf8(bytes: Vec<u8>, what: &str) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{}: {what} is not UTF-8: not an archive the kit writes; refused",
            shown(e.as_bytes())
        )
    })
}

/// Bytes of a name for a message: printable, and at most 200 characters of it.
fn shown(name: &[u8]) -> String {
    let text = name.escape_ascii().to_string();
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

#[cfg(test)]
mod tests;
