"""What a shared object imports from each library it names, and what it exports (W33). Standard library only.

A library built with a version script (cuBLAS, cuDNN, NCCL, glibc) tags every symbol it exports with a version,
and a consumer linked against it records, per imported symbol, the version and so the file it must come from
(`cublasLtMatmul@libcublasLt.so.13`). That is what lets the check say which provider must export which symbol
without loading anything. Read from the section headers: `.dynsym`, its string table, `.gnu.version`,
and `.gnu.version_r` (the versions needed, each with its file). ELF64 little-endian only: the image is x86_64.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

_SHT_DYNSYM, _SHT_VERDEF, _SHT_VERNEED, _SHT_VERSYM = 11, 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
_VER_FLG_BASE = 1
_SHN_UNDEF = 0
_STB_WEAK = 2
_SYM = struct.Struct("<IBBHQQ")
_SECTION = struct.Struct("<IIQQQQIIQQ")


class ElfSymbolsError(ValueError):
    pass


@dataclass
class Symbols:
    # file named in .gnu.version_r -> the symbols this object must find there (weak ones excluded: they may be absent)
    imports: dict[str, set[str]] = field(default_factory=dict)
    exports: set[str] = field(default_factory=set)
    # every symbol it must find somewhere, versioned or not (the Python C API's are not versioned)
    undefined: set[str] = field(default_factory=set)
    # file named in .gnu.version_r -> the version names it must define there (`EFA_1.4` from libefa.so.1)
    needs: dict[str, set[str]] = field(default_factory=dict)
    defines: set[str] = field(default_factory=set)  # the version names this object defines (.gnu.version_d)


def read(path: str) -> Symbols:
    """The versioned imports and the exports of an ELF64 little-endian shared object."""
    with open(path, "rb") as handle:

        def read_at(offset: int, size: int) -> bytes:
            handle.seek(offset)
            data = handle.read(size)
            if len(data) != size:
                raise ElfSymbolsError(f"{path}: truncated at offset {offset}")
            return data

        header = handle.read(64)
        if len(header) < 64 or header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
            raise ElfSymbolsError(f"{path} is not an ELF64 little-endian file")
        shoff = struct.unpack_from("<Q", header, 40)[0]
        shentsize, shnum = struct.unpack_from("<HH", header, 58)
        if not shoff or not shnum:
            raise ElfSymbolsError(f"{path} has no section headers")
        table = read_at(shoff, shentsize * shnum)
        sections = [_SECTION.unpack_from(table, i * shentsize) for i in range(shnum)]
        by_type = {s[1]: s for s in sections if s[1] in (_SHT_DYNSYM, _SHT_VERDEF, _SHT_VERNEED, _SHT_VERSYM)}
        if _SHT_DYNSYM not in by_type:
            raise ElfSymbolsError(f"{path} has no dynamic symbol table")
        dynsym = by_type[_SHT_DYNSYM]
        strtab_section = sections[dynsym[6]]
        strings = read_at(strtab_section[4], strtab_section[5])

        def name(at: int) -> str:
            return strings[at : strings.index(b"\0", at)].decode(errors="replace")

        symbols = read_at(dynsym[4], dynsym[5])
        count = dynsym[5] // _SYM.size
        versym = by_type.get(_SHT_VERSYM)
        indices = struct.unpack_from(f"<{count}H", read_at(versym[4], 2 * count)) if versym else (0,) * count

        result = Symbols()
        file_of: dict[int, str] = {}  # version index -> the file a needed version belongs to
        if _SHT_VERNEED in by_type:
            section = by_type[_SHT_VERNEED]
            data, offset = read_at(section[4], section[5]), 0
            for _ in range(section[7]):  # sh_info: the number of entries
                _, cnt, file, aux, nxt = struct.unpack_from("<HHIII", data, offset)
                at = offset + aux
                for _ in range(cnt):
                    _, _, other, version, aux_next = struct.unpack_from("<IHHII", data, at)
                    file_of[other] = name(file)
                    result.needs.setdefault(name(file), set()).add(name(version))
                    at += aux_next
                offset += nxt
        if _SHT_VERDEF in by_type:
            section = by_type[_SHT_VERDEF]
            data, offset = read_at(section[4], section[5]), 0
            for _ in range(section[7]):
                _, flags, _, cnt, _, aux, nxt = struct.unpack_from("<HHHHIII", data, offset)
                if cnt and not flags & _VER_FLG_BASE:
                    result.defines.add(name(struct.unpack_from("<I", data, offset + aux)[0]))
                offset += nxt
        for i in range(1, count):
            st_name, st_info, _, st_shndx, _, _ = _SYM.unpack_from(symbols, i * _SYM.size)
            if st_shndx != _SHN_UNDEF:
                result.exports.add(name(st_name))
                continue
            if st_info >> 4 == _STB_WEAK or not st_name:
                continue
            result.undefined.add(name(st_name))
            if file := file_of.get(indices[i] & 0x7FFF):
                result.imports.setdefault(file, set()).add(name(st_name))
    return result
