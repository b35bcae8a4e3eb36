// The translation unit that tests/CMakeLists.txt builds the test binaries'
// shared precompiled header with; it defines nothing.
