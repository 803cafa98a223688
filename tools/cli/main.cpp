#include <cstdio>
int main() {
  std::puts("flymc: under construction");
  return 0;
}
