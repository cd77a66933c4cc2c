#!/bin/sh
# Builds the WSL-like kernel in /src/linux: x86_64_defconfig, then wsl-like.config (WSL2's settings)
# and guest.config (what a QEMU guest needs, and what it cannot use) merged on top and completed by
# olddefconfig; every setting of both fragments is checked to have survived before the compile starts.
# Fixed timestamp, user, host and build number make the bzImage bit-identical.
set -eu
cd /src/linux
make -s x86_64_defconfig
scripts/kconfig/merge_config.sh -m -O . .config /src/wsl-like.config /src/guest.config >/dev/null
make -s olddefconfig
bad=0
for fragment in /src/wsl-like.config /src/guest.config; do
    while IFS= read -r line; do
        case "$line" in
            CONFIG_*=*)
                grep -qxF "$line" .config || { echo "${fragment##*/}: not taken by Linux $(make -s kernelversion): $line (now: $(grep "^${line%%=*}=" .config || echo unset))"; bad=1; } ;;
            "# CONFIG_"*" is not set")
                name=${line#\# }; name=${name%% *}
                ! grep -q "^$name=" .config || { echo "${fragment##*/}: not taken: $line (now: $(grep "^$name=" .config))"; bad=1; } ;;
        esac
    done < "$fragment"
done
[ "$bad" = 0 ] || { echo "the settings above did not survive olddefconfig; fix the fragments" >&2; exit 1; }
export KBUILD_BUILD_TIMESTAMP="2025-05-20 00:00:00 UTC" KBUILD_BUILD_USER=parkbench KBUILD_BUILD_HOST=parkbench KBUILD_BUILD_VERSION=1
make -s -j"$(nproc)" bzImage
mkdir -p /out
cp arch/x86/boot/bzImage /out/vmlinuz
cp .config /out/config
