"""The import path docs/operations.md gave Python transforms before the chain moved to `shared/reshape` (so that
`strait verify` and the audit apply it too): kept so that existing transform modules still load. New modules
import `MirrorRecord` from `shared.reshape`."""

from shared.reshape.mirror_record import MirrorRecord

__all__ = ["MirrorRecord"]
