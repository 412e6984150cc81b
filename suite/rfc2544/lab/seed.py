"""Per-lab SSH client key, per-VM host keys and the per-VM seed disk.

The seed disk is a small ext4 image made with `mkfs.ext4 -d` (no loop
mount). The guest's rfc2544-seed unit applies it before sshd starts.
"""
import os
import shutil
import subprocess
from pathlib import Path

from rfc2544.errors import InfraError

SEED_SIZE = "8M"


def _run(cmd, what):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as exc:
        raise InfraError(f"lab: {what}: {exc.strerror or exc}")
    if r.returncode != 0:
        raise InfraError(f"lab: {what} failed: {(r.stderr.strip().splitlines() or [''])[-1]}")


def keygen(path: Path, comment: str):
    """A fresh ed25519 key pair at path / path.pub."""
    for p in (path, path.with_name(path.name + ".pub")):
        if p.exists():
            p.unlink()
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
         "ssh-keygen")
    os.chmod(path, 0o600)


def make_seed(vm_dir: Path, hostname: str, authorized_key: Path, script: str) -> Path:
    """Host key + seed image for one VM. Returns the seed image path."""
    content = vm_dir / "seed"
    shutil.rmtree(content, ignore_errors=True)
    content.mkdir(parents=True)
    keygen(content / "ssh_host_ed25519_key", f"root@{hostname}")
    (content / "hostname").write_text(hostname + "\n")
    shutil.copyfile(authorized_key, content / "authorized_keys")
    (content / "network.sh").write_text(script)
    image = vm_dir / "seed.img"
    if image.exists():
        image.unlink()
    _run(["mkfs.ext4", "-q", "-F", "-L", "rfc2544seed", "-d", str(content), str(image), SEED_SIZE],
         "mkfs.ext4 (seed disk)")
    return image


def host_public_key(vm_dir: Path) -> str:
    """'ssh-ed25519 AAAA...' of the VM's host key."""
    fields = (vm_dir / "seed" / "ssh_host_ed25519_key.pub").read_text().split()
    return f"{fields[0]} {fields[1]}"
