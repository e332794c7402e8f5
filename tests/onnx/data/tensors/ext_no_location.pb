Bxj
offset8p