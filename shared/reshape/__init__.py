"""What a flow does to the records it copies: its transforms and provenance rules, one implementation that
data-mirror's copiers apply and that `strait verify` and the audit apply to the source to know what the target must
hold. A Python transform's module imports `MirrorRecord` from here."""

from shared.reshape.mirror_record import MirrorRecord

__all__ = ["MirrorRecord"]
