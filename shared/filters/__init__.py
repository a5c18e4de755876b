"""Topic, group, config-property and ACL filters: a Protocol and MM2's Default for each."""

from shared.filters.acl import AclBindingSpec, AclFilter, DefaultAclFilter, to_remote_acl
from shared.filters.config_property import (
    CONFIG_PROPERTIES_EXCLUDE_DEFAULT,
    USE_DEFAULTS_FROM_DEFAULT,
    ConfigPropertyFilter,
    DefaultConfigPropertyFilter,
)
from shared.filters.group import GROUPS_EXCLUDE_DEFAULT, GROUPS_INCLUDE_DEFAULT, DefaultGroupFilter, GroupFilter
from shared.filters.topic import TOPICS_EXCLUDE_DEFAULT, TOPICS_INCLUDE_DEFAULT, DefaultTopicFilter, TopicFilter

__all__ = [
    "CONFIG_PROPERTIES_EXCLUDE_DEFAULT",
    "GROUPS_EXCLUDE_DEFAULT",
    "GROUPS_INCLUDE_DEFAULT",
    "TOPICS_EXCLUDE_DEFAULT",
    "TOPICS_INCLUDE_DEFAULT",
    "USE_DEFAULTS_FROM_DEFAULT",
    "AclBindingSpec",
    "AclFilter",
    "ConfigPropertyFilter",
    "DefaultAclFilter",
    "DefaultConfigPropertyFilter",
    "DefaultGroupFilter",
    "DefaultTopicFilter",
    "GroupFilter",
    "TopicFilter",
    "to_remote_acl",
]
