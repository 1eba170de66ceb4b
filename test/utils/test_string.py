"""Tests of ToStringMixin: which attributes are shown, nesting and reference cycles."""

from tianshou.utils.string import ToStringMixin


class Config(ToStringMixin):
    def __init__(self) -> None:
        self.lr = 0.1
        self.name = "a"
        self._secret = 1


class Hooked(Config):
    def _tostring_excludes(self) -> list[str]:
        return ["name"]

    def _tostring_includes(self) -> list[str]:
        return ["_secret"]

    def _tostring_additional_entries(self) -> dict[str, object]:
        return {"derived": 2 * self.lr}


class Node(ToStringMixin):
    def __init__(self, child: object = None) -> None:
        self.child = child


def test_str_lists_public_attributes_in_definition_order() -> None:
    assert str(Config()) == "Config[lr=0.1, name=a]"
    assert repr(Config()) == str(Config())


def test_hooks_exclude_include_and_add_entries() -> None:
    assert str(Hooked()) == "Hooked[lr=0.1, _secret=1, derived=0.2]"


def test_nested_objects_render_recursively_also_inside_containers() -> None:
    assert str(Node(Node(1))) == "Node[child=Node[child=1]]"
    assert str(Node([Node(2)])) == "Node[child=[Node[child=2]]]"


def test_reference_cycle_is_cut() -> None:
    a = Node()
    b = Node(a)
    a.child = b
    assert str(a) == "Node[child=Node[child=Node[<cycle>]]]"
