// SPDX-License-Identifier: GPL-2.0

//! Malloc types test module with many types.
//!
//! Defines 200 malloc types, `many 000` to `many 199`, and allocates `i + 1` blocks of 32 bytes
//! with type `many i` at load, keeping them until unload, so that tests can check that every
//! type of a module is registered, listed and counted, and that all disappear at unload.
//!
//! The definitions below are written out one per line on purpose: each type is a separate
//! static, as in real code.

use kernel::{
    alloc::KVec,
    malloc_type::MallocType,
    prelude::*, //
};

module! {
    type: ManyTypes,
    name: "malloc_type_many_test",
    authors: ["Seed b810a448 maintainers <maintainers@users.noreply.a-seed-b810a448.example>"],
    description: "Malloc types: a module with 200 types",
    license: "GPL",
}

kernel::malloc_define!(M_MANY_000, "many 000", "Test type 0 of 200");
kernel::malloc_define!(M_MANY_001, "many 001", "Test type 1 of 200");
kernel::malloc_define!(M_MANY_002, "many 002", "Test type 2 of 200");
kernel::malloc_define!(M_MANY_003, "many 003", "Test type 3 of 200");
kernel::malloc_define!(M_MANY_004, "many 004", "Test type 4 of 200");
kernel::malloc_define!(M_MANY_005, "many 005", "Test type 5 of 200");
kernel::malloc_define!(M_MANY_006, "many 006", "Test type 6 of 200");
kernel::malloc_define!(M_MANY_007, "many 007", "Test type 7 of 200");
kernel::malloc_define!(M_MANY_008, "many 008", "Test type 8 of 200");
kernel::malloc_define!(M_MANY_009, "many 009", "Test type 9 of 200");
kernel::malloc_define!(M_MANY_010, "many 010", "Test type 10 of 200");
kernel::malloc_define!(M_MANY_011, "many 011", "Test type 11 of 200");
kernel::malloc_define!(M_MANY_012, "many 012", "Test type 12 of 200");
kernel::malloc_define!(M_MANY_013, "many 013", "Test type 13 of 200");
kernel::malloc_define!(M_MANY_014, "many 014", "Test type 14 of 200");
kernel::malloc_define!(M_MANY_015, "many 015", "Test type 15 of 200");
kernel::malloc_define!(M_MANY_016, "many 016", "Test type 16 of 200");
kernel::malloc_define!(M_MANY_017, "many 017", "Test type 17 of 200");
kernel::malloc_define!(M_MANY_018, "many 018", "Test type 18 of 200");
kernel::malloc_define!(M_MANY_019, "many 019", "Test type 19 of 200");
kernel::malloc_define!(M_MANY_020, "many 020", "Test type 20 of 200");
kernel::malloc_define!(M_MANY_021, "many 021", "Test type 21 of 200");
kernel::malloc_define!(M_MANY_022, "many 022", "Test type 22 of 200");
kernel::malloc_define!(M_MANY_023, "many 023", "Test type 23 of 200");
kernel::malloc_define!(M_MANY_024, "many 024", "Test type 24 of 200");
kernel::malloc_define!(M_MANY_025, "many 025", "Test type 25 of 200");
kernel::malloc_define!(M_MANY_026, "many 026", "Test type 26 of 200");
kernel::malloc_define!(M_MANY_027, "many 027", "Test type 27 of 200");
kernel::malloc_define!(M_MANY_028, "many 028", "Test type 28 of 200");
kernel::malloc_define!(M_MANY_029, "many 029", "Test type 29 of 200");
kernel::malloc_define!(M_MANY_030, "many 030", "Test type 30 of 200");
kernel::malloc_define!(M_MANY_031, "many 031", "Test type 31 of 200");
kernel::malloc_define!(M_MANY_032, "many 032", "Test type 32 of 200");
kernel::malloc_define!(M_MANY_033, "many 033", "Test type 33 of 200");
kernel::malloc_define!(M_MANY_034, "many 034", "Test type 34 of 200");
kernel::malloc_define!(M_MANY_035, "many 035", "Test type 35 of 200");
kernel::malloc_define!(M_MANY_036, "many 036", "Test type 36 of 200");
kernel::malloc_define!(M_MANY_037, "many 037", "Test type 37 of 200");
kernel::malloc_define!(M_MANY_038, "many 038", "Test type 38 of 200");
kernel::malloc_define!(M_MANY_039, "many 039", "Test type 39 of 200");
kernel::malloc_define!(M_MANY_040, "many 040", "Test type 40 of 200");
kernel::malloc_define!(M_MANY_041, "many 041", "Test type 41 of 200");
kernel::malloc_define!(M_MANY_042, "many 042", "Test type 42 of 200");
kernel::malloc_define!(M_MANY_043, "many 043", "Test type 43 of 200");
kernel::malloc_define!(M_MANY_044, "many 044", "Test type 44 of 200");
kernel::malloc_define!(M_MANY_045, "many 045", "Test type 45 of 200");
kernel::malloc_define!(M_MANY_046, "many 046", "Test type 46 of 200");
kernel::malloc_define!(M_MANY_047, "many 047", "Test type 47 of 200");
kernel::malloc_define!(M_MANY_048, "many 048", "Test type 48 of 200");
kernel::malloc_define!(M_MANY_049, "many 049", "Test type 49 of 200");
kernel::malloc_define!(M_MANY_050, "many 050", "Test type 50 of 200");
kernel::malloc_define!(M_MANY_051, "many 051", "Test type 51 of 200");
kernel::malloc_define!(M_MANY_052, "many 052", "Test type 52 of 200");
kernel::malloc_define!(M_MANY_053, "many 053", "Test type 53 of 200");
kernel::malloc_define!(M_MANY_054, "many 054", "Test type 54 of 200");
kernel::malloc_define!(M_MANY_055, "many 055", "Test type 55 of 200");
kernel::malloc_define!(M_MANY_056, "many 056", "Test type 56 of 200");
kernel::malloc_define!(M_MANY_057, "many 057", "Test type 57 of 200");
kernel::malloc_define!(M_MANY_058, "many 058", "Test type 58 of 200");
kernel::malloc_define!(M_MANY_059, "many 059", "Test type 59 of 200");
kernel::malloc_define!(M_MANY_060, "many 060", "Test type 60 of 200");
kernel::malloc_define!(M_MANY_061, "many 061", "Test type 61 of 200");
kernel::malloc_define!(M_MANY_062, "many 062", "Test type 62 of 200");
kernel::malloc_define!(M_MANY_063, "many 063", "Test type 63 of 200");
kernel::malloc_define!(M_MANY_064, "many 064", "Test type 64 of 200");
kernel::malloc_define!(M_MANY_065, "many 065", "Test type 65 of 200");
kernel::malloc_define!(M_MANY_066, "many 066", "Test type 66 of 200");
kernel::malloc_define!(M_MANY_067, "many 067", "Test type 67 of 200");
kernel::malloc_define!(M_MANY_068, "many 068", "Test type 68 of 200");
kernel::malloc_define!(M_MANY_069, "many 069", "Test type 69 of 200");
kernel::malloc_define!(M_MANY_070, "many 070", "Test type 70 of 200");
kernel::malloc_define!(M_MANY_071, "many 071", "Test type 71 of 200");
kernel::malloc_define!(M_MANY_072, "many 072", "Test type 72 of 200");
kernel::malloc_define!(M_MANY_073, "many 073", "Test type 73 of 200");
kernel::malloc_define!(M_MANY_074, "many 074", "Test type 74 of 200");
kernel::malloc_define!(M_MANY_075, "many 075", "Test type 75 of 200");
kernel::malloc_define!(M_MANY_076, "many 076", "Test type 76 of 200");
kernel::malloc_define!(M_MANY_077, "many 077", "Test type 77 of 200");
kernel::malloc_define!(M_MANY_078, "many 078", "Test type 78 of 200");
kernel::malloc_define!(M_MANY_079, "many 079", "Test type 79 of 200");
kernel::malloc_define!(M_MANY_080, "many 080", "Test type 80 of 200");
kernel::malloc_define!(M_MANY_081, "many 081", "Test type 81 of 200");
kernel::malloc_define!(M_MANY_082, "many 082", "Test type 82 of 200");
kernel::malloc_define!(M_MANY_083, "many 083", "Test type 83 of 200");
kernel::malloc_define!(M_MANY_084, "many 084", "Test type 84 of 200");
kernel::malloc_define!(M_MANY_085, "many 085", "Test type 85 of 200");
kernel::malloc_define!(M_MANY_086, "many 086", "Test type 86 of 200");
kernel::malloc_define!(M_MANY_087, "many 087", "Test type 87 of 200");
kernel::malloc_define!(M_MANY_088, "many 088", "Test type 88 of 200");
kernel::malloc_define!(M_MANY_089, "many 089", "Test type 89 of 200");
kernel::malloc_define!(M_MANY_090, "many 090", "Test type 90 of 200");
kernel::malloc_define!(M_MANY_091, "many 091", "Test type 91 of 200");
kernel::malloc_define!(M_MANY_092, "many 092", "Test type 92 of 200");
kernel::malloc_define!(M_MANY_093, "many 093", "Test type 93 of 200");
kernel::malloc_define!(M_MANY_094, "many 094", "Test type 94 of 200");
kernel::malloc_define!(M_MANY_095, "many 095", "Test type 95 of 200");
kernel::malloc_define!(M_MANY_096, "many 096", "Test type 96 of 200");
kernel::malloc_define!(M_MANY_097, "many 097", "Test type 97 of 200");
kernel::malloc_define!(M_MANY_098, "many 098", "Test type 98 of 200");
kernel::malloc_define!(M_MANY_099, "many 099", "Test type 99 of 200");
kernel::malloc_define!(M_MANY_100, "many 100", "Test type 100 of 200");
kernel::malloc_define!(M_MANY_101, "many 101", "Test type 101 of 200");
kernel::malloc_define!(M_MANY_102, "many 102", "Test type 102 of 200");
kernel::malloc_define!(M_MANY_103, "many 103", "Test type 103 of 200");
kernel::malloc_define!(M_MANY_104, "many 104", "Test type 104 of 200");
kernel::malloc_define!(M_MANY_105, "many 105", "Test type 105 of 200");
kernel::malloc_define!(M_MANY_106, "many 106", "Test type 106 of 200");
kernel::malloc_define!(M_MANY_107, "many 107", "Test type 107 of 200");
kernel::malloc_define!(M_MANY_108, "many 108", "Test type 108 of 200");
kernel::malloc_define!(M_MANY_109, "many 109", "Test type 109 of 200");
kernel::malloc_define!(M_MANY_110, "many 110", "Test type 110 of 200");
kernel::malloc_define!(M_MANY_111, "many 111", "Test type 111 of 200");
kernel::malloc_define!(M_MANY_112, "many 112", "Test type 112 of 200");
kernel::malloc_define!(M_MANY_113, "many 113", "Test type 113 of 200");
kernel::malloc_define!(M_MANY_114, "many 114", "Test type 114 of 200");
kernel::malloc_define!(M_MANY_115, "many 115", "Test type 115 of 200");
kernel::malloc_define!(M_MANY_116, "many 116", "Test type 116 of 200");
kernel::malloc_define!(M_MANY_117, "many 117", "Test type 117 of 200");
kernel::malloc_define!(M_MANY_118, "many 118", "Test type 118 of 200");
kernel::malloc_define!(M_MANY_119, "many 119", "Test type 119 of 200");
kernel::malloc_define!(M_MANY_120, "many 120", "Test type 120 of 200");
kernel::malloc_define!(M_MANY_121, "many 121", "Test type 121 of 200");
kernel::malloc_define!(M_MANY_122, "many 122", "Test type 122 of 200");
kernel::malloc_define!(M_MANY_123, "many 123", "Test type 123 of 200");
kernel::malloc_define!(M_MANY_124, "many 124", "Test type 124 of 200");
kernel::malloc_define!(M_MANY_125, "many 125", "Test type 125 of 200");
kernel::malloc_define!(M_MANY_126, "many 126", "Test type 126 of 200");
kernel::malloc_define!(M_MANY_127, "many 127", "Test type 127 of 200");
kernel::malloc_define!(M_MANY_128, "many 128", "Test type 128 of 200");
kernel::malloc_define!(M_MANY_129, "many 129", "Test type 129 of 200");
kernel::malloc_define!(M_MANY_130, "many 130", "Test type 130 of 200");
kernel::malloc_define!(M_MANY_131, "many 131", "Test type 131 of 200");
kernel::malloc_define!(M_MANY_132, "many 132", "Test type 132 of 200");
kernel::malloc_define!(M_MANY_133, "many 133", "Test type 133 of 200");
kernel::malloc_define!(M_MANY_134, "many 134", "Test type 134 of 200");
kernel::malloc_define!(M_MANY_135, "many 135", "Test type 135 of 200");
kernel::malloc_define!(M_MANY_136, "many 136", "Test type 136 of 200");
kernel::malloc_define!(M_MANY_137, "many 137", "Test type 137 of 200");
kernel::malloc_define!(M_MANY_138, "many 138", "Test type 138 of 200");
kernel::malloc_define!(M_MANY_139, "many 139", "Test type 139 of 200");
kernel::malloc_define!(M_MANY_140, "many 140", "Test type 140 of 200");
kernel::malloc_define!(M_MANY_141, "many 141", "Test type 141 of 200");
kernel::malloc_define!(M_MANY_142, "many 142", "Test type 142 of 200");
kernel::malloc_define!(M_MANY_143, "many 143", "Test type 143 of 200");
kernel::malloc_define!(M_MANY_144, "many 144", "Test type 144 of 200");
kernel::malloc_define!(M_MANY_145, "many 145", "Test type 145 of 200");
kernel::malloc_define!(M_MANY_146, "many 146", "Test type 146 of 200");
kernel::malloc_define!(M_MANY_147, "many 147", "Test type 147 of 200");
kernel::malloc_define!(M_MANY_148, "many 148", "Test type 148 of 200");
kernel::malloc_define!(M_MANY_149, "many 149", "Test type 149 of 200");
kernel::malloc_define!(M_MANY_150, "many 150", "Test type 150 of 200");
kernel::malloc_define!(M_MANY_151, "many 151", "Test type 151 of 200");
kernel::malloc_define!(M_MANY_152, "many 152", "Test type 152 of 200");
kernel::malloc_define!(M_MANY_153, "many 153", "Test type 153 of 200");
kernel::malloc_define!(M_MANY_154, "many 154", "Test type 154 of 200");
kernel::malloc_define!(M_MANY_155, "many 155", "Test type 155 of 200");
kernel::malloc_define!(M_MANY_156, "many 156", "Test type 156 of 200");
kernel::malloc_define!(M_MANY_157, "many 157", "Test type 157 of 200");
kernel::malloc_define!(M_MANY_158, "many 158", "Test type 158 of 200");
kernel::malloc_define!(M_MANY_159, "many 159", "Test type 159 of 200");
kernel::malloc_define!(M_MANY_160, "many 160", "Test type 160 of 200");
kernel::malloc_define!(M_MANY_161, "many 161", "Test type 161 of 200");
kernel::malloc_define!(M_MANY_162, "many 162", "Test type 162 of 200");
kernel::malloc_define!(M_MANY_163, "many 163", "Test type 163 of 200");
kernel::malloc_define!(M_MANY_164, "many 164", "Test type 164 of 200");
kernel::malloc_define!(M_MANY_165, "many 165", "Test type 165 of 200");
kernel::malloc_define!(M_MANY_166, "many 166", "Test type 166 of 200");
kernel::malloc_define!(M_MANY_167, "many 167", "Test type 167 of 200");
kernel::malloc_define!(M_MANY_168, "many 168", "Test type 168 of 200");
kernel::malloc_define!(M_MANY_169, "many 169", "Test type 169 of 200");
kernel::malloc_define!(M_MANY_170, "many 170", "Test type 170 of 200");
kernel::malloc_define!(M_MANY_171, "many 171", "Test type 171 of 200");
kernel::malloc_define!(M_MANY_172, "many 172", "Test type 172 of 200");
kernel::malloc_define!(M_MANY_173, "many 173", "Test type 173 of 200");
kernel::malloc_define!(M_MANY_174, "many 174", "Test type 174 of 200");
kernel::malloc_define!(M_MANY_175, "many 175", "Test type 175 of 200");
kernel::malloc_define!(M_MANY_176, "many 176", "Test type 176 of 200");
kernel::malloc_define!(M_MANY_177, "many 177", "Test type 177 of 200");
kernel::malloc_define!(M_MANY_178, "many 178", "Test type 178 of 200");
kernel::malloc_define!(M_MANY_179, "many 179", "Test type 179 of 200");
kernel::malloc_define!(M_MANY_180, "many 180", "Test type 180 of 200");
kernel::malloc_define!(M_MANY_181, "many 181", "Test type 181 of 200");
kernel::malloc_define!(M_MANY_182, "many 182", "Test type 182 of 200");
kernel::malloc_define!(M_MANY_183, "many 183", "Test type 183 of 200");
kernel::malloc_define!(M_MANY_184, "many 184", "Test type 184 of 200");
kernel::malloc_define!(M_MANY_185, "many 185", "Test type 185 of 200");
kernel::malloc_define!(M_MANY_186, "many 186", "Test type 186 of 200");
kernel::malloc_define!(M_MANY_187, "many 187", "Test type 187 of 200");
kernel::malloc_define!(M_MANY_188, "many 188", "Test type 188 of 200");
kernel::malloc_define!(M_MANY_189, "many 189", "Test type 189 of 200");
kernel::malloc_define!(M_MANY_190, "many 190", "Test type 190 of 200");
kernel::malloc_define!(M_MANY_191, "many 191", "Test type 191 of 200");
kernel::malloc_define!(M_MANY_192, "many 192", "Test type 192 of 200");
kernel::malloc_define!(M_MANY_193, "many 193", "Test type 193 of 200");
kernel::malloc_define!(M_MANY_194, "many 194", "Test type 194 of 200");
kernel::malloc_define!(M_MANY_195, "many 195", "Test type 195 of 200");
kernel::malloc_define!(M_MANY_196, "many 196", "Test type 196 of 200");
kernel::malloc_define!(M_MANY_197, "many 197", "Test type 197 of 200");
kernel::malloc_define!(M_MANY_198, "many 198", "Test type 198 of 200");
kernel::malloc_define!(M_MANY_199, "many 199", "Test type 199 of 200");

/// The types, in order.
static TYPES: [&MallocType; 200] = [
    &M_MANY_000,
    &M_MANY_001,
    &M_MANY_002,
    &M_MANY_003,
    &M_MANY_004,
    &M_MANY_005,
    &M_MANY_006,
    &M_MANY_007,
    &M_MANY_008,
    &M_MANY_009,
    &M_MANY_010,
    &M_MANY_011,
    &M_MANY_012,
    &M_MANY_013,
    &M_MANY_014,
    &M_MANY_015,
    &M_MANY_016,
    &M_MANY_017,
    &M_MANY_018,
    &M_MANY_019,
    &M_MANY_020,
    &M_MANY_021,
    &M_MANY_022,
    &M_MANY_023,
    &M_MANY_024,
    &M_MANY_025,
    &M_MANY_026,
    &M_MANY_027,
    &M_MANY_028,
    &M_MANY_029,
    &M_MANY_030,
    &M_MANY_031,
    &M_MANY_032,
    &M_MANY_033,
    &M_MANY_034,
    &M_MANY_035,
    &M_MANY_036,
    &M_MANY_037,
    &M_MANY_038,
    &M_MANY_039,
    &M_MANY_040,
    &M_MANY_041,
    &M_MANY_042,
    &M_MANY_043,
    &M_MANY_044,
    &M_MANY_045,
    &M_MANY_046,
    &M_MANY_047,
    &M_MANY_048,
    &M_MANY_049,
    &M_MANY_050,
    &M_MANY_051,
    &M_MANY_052,
    &M_MANY_053,
    &M_MANY_054,
    &M_MANY_055,
    &M_MANY_056,
    &M_MANY_057,
    &M_MANY_058,
    &M_MANY_059,
    &M_MANY_060,
    &M_MANY_061,
    &M_MANY_062,
    &M_MANY_063,
    &M_MANY_064,
    &M_MANY_065,
    &M_MANY_066,
    &M_MANY_067,
    &M_MANY_068,
    &M_MANY_069,
    &M_MANY_070,
    &M_MANY_071,
    &M_MANY_072,
    &M_MANY_073,
    &M_MANY_074,
    &M_MANY_075,
    &M_MANY_076,
    &M_MANY_077,
    &M_MANY_078,
    &M_MANY_079,
    &M_MANY_080,
    &M_MANY_081,
    &M_MANY_082,
    &M_MANY_083,
    &M_MANY_084,
    &M_MANY_085,
    &M_MANY_086,
    &M_MANY_087,
    &M_MANY_088,
    &M_MANY_089,
    &M_MANY_090,
    &M_MANY_091,
    &M_MANY_092,
    &M_MANY_093,
    &M_MANY_094,
    &M_MANY_095,
    &M_MANY_096,
    &M_MANY_097,
    &M_MANY_098,
    &M_MANY_099,
    &M_MANY_100,
    &M_MANY_101,
    &M_MANY_102,
    &M_MANY_103,
    &M_MANY_104,
    &M_MANY_105,
    &M_MANY_106,
    &M_MANY_107,
    &M_MANY_108,
    &M_MANY_109,
    &M_MANY_110,
    &M_MANY_111,
    &M_MANY_112,
    &M_MANY_113,
    &M_MANY_114,
    &M_MANY_115,
    &M_MANY_116,
    &M_MANY_117,
    &M_MANY_118,
    &M_MANY_119,
    &M_MANY_120,
    &M_MANY_121,
    &M_MANY_122,
    &M_MANY_123,
    &M_MANY_124,
    &M_MANY_125,
    &M_MANY_126,
    &M_MANY_127,
    &M_MANY_128,
    &M_MANY_129,
    &M_MANY_130,
    &M_MANY_131,
    &M_MANY_132,
    &M_MANY_133,
    &M_MANY_134,
    &M_MANY_135,
    &M_MANY_136,
    &M_MANY_137,
    &M_MANY_138,
    &M_MANY_139,
    &M_MANY_140,
    &M_MANY_141,
    &M_MANY_142,
    &M_MANY_143,
    &M_MANY_144,
    &M_MANY_145,
    &M_MANY_146,
    &M_MANY_147,
    &M_MANY_148,
    &M_MANY_149,
    &M_MANY_150,
    &M_MANY_151,
    &M_MANY_152,
    &M_MANY_153,
    &M_MANY_154,
    &M_MANY_155,
    &M_MANY_156,
    &M_MANY_157,
    &M_MANY_158,
    &M_MANY_159,
    &M_MANY_160,
    &M_MANY_161,
    &M_MANY_162,
    &M_MANY_163,
    &M_MANY_164,
    &M_MANY_165,
    &M_MANY_166,
    &M_MANY_167,
    &M_MANY_168,
    &M_MANY_169,
    &M_MANY_170,
    &M_MANY_171,
    &M_MANY_172,
    &M_MANY_173,
    &M_MANY_174,
    &M_MANY_175,
    &M_MANY_176,
    &M_MANY_177,
    &M_MANY_178,
    &M_MANY_179,
    &M_MANY_180,
    &M_MANY_181,
    &M_MANY_182,
    &M_MANY_183,
    &M_MANY_184,
    &M_MANY_185,
    &M_MANY_186,
    &M_MANY_187,
    &M_MANY_188,
    &M_MANY_189,
    &M_MANY_190,
    &M_MANY_191,
    &M_MANY_192,
    &M_MANY_193,
    &M_MANY_194,
    &M_MANY_195,
    &M_MANY_196,
    &M_MANY_197,
    &M_MANY_198,
    &M_MANY_199,
];

/// The live allocations: (type index, block).
struct ManyTypes {
    blocks: KVec<(usize, core::ptr::NonNull<[u8]>)>,
}

// SAFETY: The blocks are plain memory owned by the module; any thread may free them.
unsafe impl Send for ManyTypes {}
// SAFETY: `&ManyTypes` gives no access to the blocks.
unsafe impl Sync for ManyTypes {}

impl kernel::Module for ManyTypes {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut this = ManyTypes {
            blocks: KVec::new(),
        };
        for (i, t) in TYPES.iter().enumerate() {
            for _ in 0..=i {
                let p = t.malloc(32, GFP_KERNEL)?;
                if let Err(e) = this.blocks.push((i, p), GFP_KERNEL) {
                    // SAFETY: `p` came from `t` with 32 bytes and is not kept.
                    unsafe { t.free(p.as_ptr().cast()) };
                    return Err(e.into());
                }
            }
        }
        pr_info!("{} types, {} blocks\n", TYPES.len(), this.blocks.len());
        Ok(this)
    }
}

impl Drop for ManyTypes {
    fn drop(&mut self) {
        for &(i, p) in self.blocks.iter() {
            // SAFETY: Each block came from `TYPES[i]` with 32 bytes and is freed once, here.
            unsafe { TYPES[i].free(p.as_ptr().cast()) };
        }
    }
}
