Bxj
locationinput.pbj
offset0j
length4p